#include "actors/log_handlers.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

namespace taskforce {

void log_instead_of_printing(caf::scheduled_actor* self) {
  self->set_default_handler(
    [](caf::scheduled_actor* ptr,
       caf::message_view& x) -> caf::result<caf::message> {
      spdlog::warn("{}: unexpected message {}", ptr->name(),
                   x.content().stringify());
      return caf::sec::unexpected_message;
    });
  self->set_exception_handler([self](std::exception_ptr& eptr) -> caf::error {
    try {
      std::rethrow_exception(eptr);
    } catch (const std::exception& e) {
      spdlog::error("{}: {}", self->name(), e.what());
    } catch (...) {
      spdlog::error("{}: unknown exception", self->name());
    }
    return caf::exit_reason::unhandled_exception;
  });
}

} // namespace taskforce
