#include "actors/watchdog.hpp"

#include <chrono>

#include <caf/all.hpp>

#include "actors/log_handlers.hpp"
#include "src/time/duration.hpp"

namespace taskforce {

watchdog_actor::behavior_type
watchdog(watchdog_actor::stateful_pointer<watchdog_state> self) {
  log_instead_of_printing(self);
  // An owner that exits needs no expiry; its timers would only keep it alive.
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    st.owners.erase(msg.source);
    auto first = st.by_owner.lower_bound(std::make_pair(msg.source, 0));
    auto last = first;
    while (last != st.by_owner.end() && last->first.first == msg.source) {
      st.armed.erase(last->second);
      ++last;
    }
    st.by_owner.erase(first, last);
  });
  return {
    // -- owners
    // -----------------------------------------------------------------
    [self](arm_atom, uint64_t id, uint64_t generation, caf::timespan delay) {
      auto& st = self->state;
      auto owner = self->current_sender();
      if (owner == nullptr)
        return;
      auto key = std::make_pair(caf::actor_cast<caf::actor_addr>(owner), id);
      if (st.owners.insert(key.first).second)
        self->monitor(owner);
      auto serial = st.next_serial++;
      st.armed.emplace(serial,
                       watchdog_state::timer{key.first, id, generation});
      // Re-arming replaces: the older serial's delayed message finds nothing.
      if (auto i = st.by_owner.find(key); i != st.by_owner.end()) {
        st.armed.erase(i->second);
        i->second = serial;
      } else {
        st.by_owner.emplace(std::move(key), serial);
      }
      // `now + delay` saturates: a delay past the clock's range never fires
      // instead of wrapping into the past and firing at once.
      auto due
        = saturating_deadline<caf::actor_clock>(self->clock().now(), delay);
      self->scheduled_send(self, due, expired_atom_v, serial);
    },
    [self](disarm_atom, uint64_t id) {
      auto& st = self->state;
      auto key = std::make_pair(
        caf::actor_cast<caf::actor_addr>(self->current_sender()), id);
      if (auto i = st.by_owner.find(key); i != st.by_owner.end()) {
        st.armed.erase(i->second);
        st.by_owner.erase(i);
      }
    },
    // -- delayed messages
    // -------------------------------------------------------
    [self](expired_atom, uint64_t serial) {
      auto& st = self->state;
      auto i = st.armed.find(serial);
      if (i == st.armed.end())
        return; // re-armed or disarmed meanwhile
      auto t = std::move(i->second);
      st.armed.erase(i);
      st.by_owner.erase(std::make_pair(t.owner, t.id));
      // An owner that is gone gets nothing (its down message is on its way).
      // Owners may be dynamically typed: a typed sender cannot send() there.
      if (auto owner = caf::actor_cast<caf::actor>(t.owner))
        caf::anon_send(owner, expired_atom_v, t.id, t.generation);
    },
  };
}

watchdog_actor spawn_watchdog(caf::actor_system& sys) {
  return sys.spawn(watchdog);
}

} // namespace taskforce
