// Reading whole files and locating byte offsets in text.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace taskforce {

/// The whole content of `path` (bytes as they are), or nullopt when it
/// cannot be opened.
std::optional<std::string> read_file(const std::filesystem::path& path);

/// "LINE:COLUMN" (both 1-based) of the 1-based byte offset `byte` in
/// `text`, as JSON parsers report positions.
std::string line_and_column(std::string_view text, size_t byte);

} // namespace taskforce
