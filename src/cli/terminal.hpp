// The terminal the command line writes to.
#pragma once

#include "src/cli/live_layout.hpp"

namespace taskforce::cli {

/// The size of the terminal on standard output; where it is not a terminal,
/// $COLUMNS and $LINES; else `fallback`.
screen_size terminal_size(screen_size fallback = {});

} // namespace taskforce::cli
