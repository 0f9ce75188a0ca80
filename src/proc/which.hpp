// Finding a program the way execvp would, without running it.
#pragma once

#include <optional>
#include <string>

namespace taskforce::proc {

/// Where `program` would be found: a name with a '/' is taken as a path
/// (relative ones from `cwd`), any other is searched in the folders of
/// `path_env` (a PATH value; an empty entry is the current folder). The
/// result names an executable regular file, or is nullopt.
std::optional<std::string> find_program(const std::string& program,
                                        const std::string& path_env,
                                        const std::string& cwd);

} // namespace taskforce::proc
