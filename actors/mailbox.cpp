#include "actors/mailbox.hpp"

#include <memory>
#include <optional>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "src/store/ledger.hpp"
#include "src/store/mailbox.hpp"

namespace taskforce {

namespace {

struct mailbox_state {
  static inline const char* name = "mailbox";
  std::optional<store::ledger> db;
};

caf::error failure(const store::ledger_error& e) {
  if (e.code() == store::ledger_errc::not_found)
    return caf::make_error(run_errc::unknown_task, std::string{e.what()});
  return caf::make_error(run_errc::ledger_io, std::string{e.what()});
}

mailbox_actor::behavior_type
mailbox(mailbox_actor::stateful_pointer<mailbox_state> self,
        std::shared_ptr<store::ledger> db) {
  self->state.db.emplace(std::move(*db));
  return {
    [self](take_atom, std::string& run_id, std::string& task_id)
      -> caf::result<std::vector<std::string>, std::vector<std::string>> {
      try {
        store::mailbox box{*self->state.db};
        auto taken
          = box.take_undelivered(run_id, task_id, store::wall_clock_ms());
        std::vector<std::string> answers, messages;
        for (auto& m : taken)
          (m.kind == store::mail_kind::answer ? answers : messages)
            .push_back(std::move(m.text));
        return {std::move(answers), std::move(messages)};
      } catch (const store::ledger_error& e) {
        return failure(e);
      }
    },
    [self](check_atom, std::string& run_id,
           std::string& task_id) -> caf::result<bool> {
      try {
        return store::mailbox{*self->state.db}.has_undelivered(run_id, task_id);
      } catch (const store::ledger_error& e) {
        return failure(e);
      }
    },
    [self](post_atom, std::string& run_id, std::string& task_id, turn_kind kind,
           std::string& text) -> caf::result<int64_t> {
      if (kind != turn_kind::message && kind != turn_kind::answer)
        return caf::make_error(run_errc::refused_transition,
                               std::string{"only a message or an answer "
                                           "goes down to a task"});
      try {
        store::mailbox box{*self->state.db};
        store::new_mail m;
        m.run_id = run_id;
        m.task_id = task_id;
        m.kind = kind == turn_kind::answer ? store::mail_kind::answer
                                           : store::mail_kind::message;
        m.text = std::move(text);
        return box.post(m, store::wall_clock_ms()).id;
      } catch (const store::ledger_error& e) {
        return failure(e);
      }
    },
  };
}

} // namespace

mailbox_actor spawn_mailbox(caf::actor_system& sys,
                            const std::filesystem::path& ledger_file,
                            bool detached) {
  // Moved through a shared_ptr: spawn arguments must be copyable.
  auto db = std::make_shared<store::ledger>(store::ledger::open(ledger_file));
  if (!detached)
    return sys.spawn(mailbox, db);
  return sys.spawn<caf::detached>(mailbox, db);
}

} // namespace taskforce
