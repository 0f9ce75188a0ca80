// Where an actor's surprises go. CAF's default handlers print an unexpected
// message or an escaped exception on standard output, which under
// `serve --stdio` is the protocol's own stream: every long-lived actor logs
// them instead.
#pragma once

#include <caf/fwd.hpp>

namespace taskforce {

/// Logs unexpected messages (answered with sec::unexpected_message) and
/// escaped exceptions (the actor then exits with unhandled_exception) with
/// the actor's name, instead of printing them.
void log_instead_of_printing(caf::scheduled_actor* self);

} // namespace taskforce
