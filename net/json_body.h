// JSON in and out of the HTTP layer: decoding request bodies strictly (unknown keys and wrong
// types are errors that name the field), and encoding answers and errors.
//
// Error answers are {"error":{"code":..., "message":..., "field":... or null}} with the status
// http_status_for(code) (net/http_status.h; docs/api.md, "Errors").
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <limits>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/expected.h"
#include "net/message.h"

namespace jobctl::net {

int http_status_for(const Error& e);
HttpResponse error_response(const Error& e);
HttpResponse json_response(int status, const nlohmann::json& body);

// How deep objects and arrays may nest in a request body. nlohmann::json parses without
// recursion, but serialising, copying or comparing a value recurses once per level: a body
// 100,000 levels deep (200 KB) would overflow the stack there. Bodies deeper than this are
// refused while they are parsed, before anything else touches them. (Job specs, parsed by
// train/spec/json.h, stop at the same depth.)
inline constexpr size_t kMaxJsonDepth = 64;

// The most bytes a request body's values may take once parsed, counted as 64 bytes a value (the
// node and its allocation) plus its text: "[{},{},...]" takes some 20 times its text in memory, so
// the body's byte limit alone would let a 1 MiB body become 22 MB. 8 MiB holds some 130,000
// values, far more than any request of the API has.
inline constexpr size_t kMaxJsonBodyValueBytes = size_t{8} << 20;

// Parses a request body's JSON text, refusing nesting deeper than kMaxJsonDepth, or values past
// kMaxJsonBodyValueBytes, as soon as the parser reaches them (the rest of the text is not read).
// Errors name "body": malformed_json, invalid_argument for the depth, payload_too_large for the
// values' bytes.
Expected<nlohmann::json> parse_json_body(std::string_view text);

// The text of a top-level member's value exactly as received, in `object_text` (a JSON object
// that parse_json_body accepted): the size of a part of a body is measured on the bytes that came,
// never by serialising the parsed value again. nullopt when the object has no such member.
std::optional<std::string_view> member_text(std::string_view object_text, std::string_view key);

// The request body as a JSON object. `required`: an empty body is an error (else it reads as {}).
// A non-empty body must be sent as application/json (415 otherwise) and be a JSON object (400),
// parsed by parse_json_body.
Expected<nlohmann::json> json_object_body(const HttpRequest& request, bool required);

// Refuses keys of `obj` other than `allowed` (the error names "<prefix><key>").
Status only_keys(const nlohmann::json& obj, std::initializer_list<std::string_view> allowed,
                 std::string_view prefix = "");

// Reads obj[key] as an integer >= min. Absent: `fallback` when given, else an error.
Expected<int64_t> int_field(const nlohmann::json& obj, std::string_view key, int64_t min,
                            std::optional<int64_t> fallback = std::nullopt);
// Reads obj[key] as a string of at most max_len bytes. Absent: `fallback` when given, else an error.
Expected<std::string> string_field(const nlohmann::json& obj, std::string_view key, size_t max_len,
                                   std::optional<std::string> fallback = std::nullopt);

// The error for a query parameter a route does not take (the name cut to 40 bytes, in the message
// and as the field).
Error unknown_query_parameter(std::string_view key);
// Refuses any query parameter not in `allowed` (none allowed: an empty list).
Status only_query_keys(const HttpRequest& request, std::initializer_list<std::string_view> allowed);

// Parses a decimal integer in [min, max] from a path segment or query value.
// The largest id or count a path or query parameter may name.
inline constexpr int64_t kMaxId = std::numeric_limits<int64_t>::max();

Expected<int64_t> parse_int_param(std::string_view text, std::string_view field, int64_t min,
                                  int64_t max);

}  // namespace jobctl::net
