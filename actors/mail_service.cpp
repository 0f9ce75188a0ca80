#include "actors/mail_service.hpp"

#include <memory>
#include <optional>

#include <caf/all.hpp>

#include "src/store/ledger.hpp"
#include "src/store/mailbox.hpp"

namespace taskforce {

namespace {

struct mail_state {
  static inline const char* name = "mail_service";
  std::optional<store::ledger> db;
};

worker_mail_actor::behavior_type
mail_service(worker_mail_actor::stateful_pointer<mail_state> self,
             std::shared_ptr<store::ledger> db) {
  self->state.db.emplace(std::move(*db));
  return {
    [self](take_atom, const std::string& run_id, const std::string& task_id)
      -> caf::result<std::vector<std::string>, std::vector<std::string>> {
      try {
        std::vector<std::string> answers, messages;
        store::mailbox box{*self->state.db};
        for (auto& m :
             box.take_undelivered(run_id, task_id, store::wall_clock_ms()))
          (m.kind == store::mail_kind::answer ? answers : messages)
            .push_back(std::move(m.text));
        return {std::move(answers), std::move(messages)};
      } catch (const std::exception& e) {
        return caf::make_error(run_errc::ledger_io, std::string{e.what()});
      }
    },
  };
}

} // namespace

worker_mail_actor spawn_mail_service(caf::actor_system& sys,
                                     const std::filesystem::path& ledger_file) {
  // Moved through a shared_ptr: spawn arguments must be copyable.
  auto db = std::make_shared<store::ledger>(store::ledger::open(ledger_file));
  return sys.spawn<caf::detached>(mail_service, db);
}

} // namespace taskforce
