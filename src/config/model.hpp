// A model reference as workers take it: `provider/model[#variant]`.
#pragma once

#include <string_view>

namespace taskforce {

/// True for `provider/model` or `provider/model#variant`: no blanks, a
/// non-empty provider, model and variant, at most one `#`. The model part
/// may itself hold slashes (`openrouter/anthropic/claude`).
bool is_model(std::string_view s);

/// The rule is_model checks, as error messages state it.
constexpr const char* model_rule = "provider/model or provider/model#variant";

} // namespace taskforce
