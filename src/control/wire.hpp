// The control plane's operations on the wire: a protocol request object into
// a control_request, checked field by field (a bad field throws
// protocol::bad_field, answered as bad_request), and nothing else. The
// answers are built by the control service (service.hpp).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "src/control/request.hpp"

namespace taskforce::control {

/// Reads the fields of `op` from the request object `req`. Throws
/// protocol::bad_field naming the field and the rule.
control_request decode_request(control_op op, const nlohmann::json& req);

} // namespace taskforce::control
