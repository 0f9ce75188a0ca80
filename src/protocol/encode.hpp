// The protocol's responses and events as JSON lines (without the newline).
// Pure: every front end writes its answers through these, so a response or
// event has one shape whichever transport carries it. The hot lines (grants,
// releases, pool events) are written by hand: they are most of the output,
// and building a JSON object for each would cost more than the pool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "messages/background.hpp"
#include "messages/pool.hpp"
#include "src/config/config.hpp"

namespace taskforce::protocol {

/// `id` is a request's id as JSON text (decoded::id) in every function.

/// The answer to `hello`: version, protocol and the effective pool config.
std::string hello_line(const std::string& id, const pool_config& cfg);

/// A granted acquire or adopt (`permit: null` when not counted).
std::string grant_line(const std::string& id, const grant& g);

/// The answer to `release` or `bind`.
std::string released_line(const std::string& id, bool released);

/// The answer to `child_started`: the holder the child was tied to, null
/// when none.
std::string tied_line(const std::string& id, const std::string& holder);

/// The answer to `idle` or `end`: the holders released.
std::string holders_line(const std::string& id,
                         const std::vector<std::string>& holders);

/// The answer to `status`.
std::string status_line(const std::string& id, const pool_status& st);

/// The answer to `subscribe`.
std::string subscribed_line(const std::string& id);

/// A refusal with the protocol error `code`.
std::string error_line(const std::string& id, const std::string& code,
                       const std::string& message);

/// The control plane's answer (its fields spliced after `ok`, or its
/// refusal).
std::string control_line(const std::string& id, const control_answer& a);

/// A pool event: only the fields of its kind.
std::string event_line(const pool_event& ev);

/// A control plane event.
std::string control_event_line(const control_event& ev);

/// The last event a subscriber that fell `pending` bytes behind gets.
std::string unsubscribed_line(uint64_t pending, uint64_t limit);

} // namespace taskforce::protocol
