// Command templates with {placeholders}: how the exec driver turns configured commands into shell
// command lines, and how jobctl-cloudsim builds each instance's worker command.
//
// A placeholder is {name} with name in [a-z_]; its value is inserted shell-quoted ('...'), so a
// value can never break out of its argument, whatever it contains. "{{" and "}}" are literal
// braces; a brace that does not form {name} (JSON, `aws --query '{id:InstanceId}'`) is literal.
// A placeholder the caller does not supply is an error naming it (so a typo in the
// configuration is caught when the command is first used, not run with an empty argument).
//
// Thread safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "base/expected.h"

namespace jobctl::cloud {

using Placeholders = std::map<std::string, std::string, std::less<>>;

// POSIX shell single-quoting: abc -> 'abc', it's -> 'it'\''s'.
std::string shell_quote(std::string_view value);

// Expands `tmpl`. `raw` placeholders are inserted as they are (for values that are themselves
// command lines, already quoted); the others are shell-quoted. Errors: invalid_argument naming
// `field` ("cloud.exec.launch: unknown placeholder {instnce_type}").
Expected<std::string> expand_command(std::string_view tmpl, const Placeholders& values,
                                     const std::string& field, const Placeholders& raw = {});

// True when the template contains at least one {placeholder}.
bool has_placeholders(std::string_view tmpl);

// The worker flags that dedicate an instance's worker to one command job, `for_job` ("" for 0):
// the {job_flags} placeholder of the worker command templates (cloud/provider.h LaunchRequest).
std::string job_flags(int64_t for_job, const std::vector<std::string>& worker_flags = {});

}  // namespace jobctl::cloud
