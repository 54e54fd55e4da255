// Text stored deflated: placement documents. A document lists every candidate placement
// weighed (about 13 KB of JSON against the built-in catalog), and stored as text it spilled over
// four overflow pages per job: at a backlog of 100,000 jobs that was 1.3 GB of rows, and every
// decision wrote ~5 WAL frames that the writer's checkpoints then copied back (the submit tail
// while a backlog is placed). Deflated, a document is about a tenth of that and fits in its row's
// page.
//
// The stored form (a BLOB): 4 bytes, the text's length as an unsigned little-endian integer, then
// the text as one zlib stream (RFC 1950: its Adler-32 checks the text). A column written before
// documents were deflated holds TEXT; readers take either (SQLite's column type tells them
// apart).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "base/expected.h"

namespace jobctl::daemon::store {

// A text in its stored form. Made where the text is made (placement's thread), so that the
// store's writer, which serves every submit, does not spend its time compressing.
struct DeflatedText {
  std::string bytes;
};

// The stored form of `text`. Errors: zlib's (out of memory).
Expected<DeflatedText> deflate_text(std::string_view text);
// The text back. Errors (io): a form too short, a stream that is not zlib or fails its check, or
// a length other than the header's.
Expected<std::string> inflate_text(std::string_view stored);

}  // namespace jobctl::daemon::store
