#include "src/worker/prompt.hpp"
#include "src/text/file.hpp"
#include "src/text/markdown.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace taskforce {

namespace {

/// The end of `text`, at most `limit` bytes, starting on a line boundary
/// when one is near.
std::string tail_of(const std::string& text, size_t limit) {
  if (text.size() <= limit)
    return text;
  auto start = text.size() - limit;
  auto nl = text.find('\n', start);
  if (nl != std::string::npos && nl - start < 200)
    start = nl + 1;
  return "[... " + std::to_string(start) + " earlier bytes cut ...]\n"
         + text.substr(start);
}

std::string quoted_list(const std::vector<std::string>& texts) {
  std::string out;
  for (auto& t : texts) {
    auto text = trimmed(t);
    auto fence = fence_for(text);
    out += fence + "text\n" + text + "\n" + fence + "\n\n";
  }
  return out;
}

std::string repair_section(int round, const std::string& result,
                           const std::string& gate_tail, bool by_verifier) {
  if (by_verifier) {
    auto reason = trimmed(gate_tail);
    auto fence = fence_for(reason);
    return "## Repair (round " + std::to_string(round)
           + ")\n\nYour changes are still in the working tree, and the "
             "verification command passed, but an independent reviewer "
             "rejected the work:\n\n"
           + fence + "text\n" + reason + "\n" + fence
           + "\n\nFix the cause in place, then report again.\n\n";
  }
  auto tail = tail_of(gate_tail, max_prompt_gate_tail);
  auto fence = fence_for(tail);
  std::ostringstream out;
  out << "## Repair (round " << round << ")\n\n"
      << "Your changes are still in the working tree, but the verification "
         "command failed"
      << (result.empty() ? "" : " (" + result + ")")
      << ". The end of its output:\n\n"
      << fence << "text\n"
      << tail << (tail.empty() || tail.back() == '\n' ? "" : "\n") << fence
      << "\n\nFix the cause in place, then report again.\n\n";
  return out.str();
}

std::string mail_sections(const std::vector<std::string>& answers,
                          const std::vector<std::string>& messages) {
  std::string out;
  if (!answers.empty())
    out += "## The answer to your question\n\nYou stopped and asked; a person "
           "answered:\n\n"
           + quoted_list(answers)
           + "Go on with the task in the light of it, then report again.\n\n";
  if (!messages.empty())
    out += "## Messages\n\nWhile you worked, these messages were sent to "
           "this task:\n\n"
           + quoted_list(messages)
           + "Take them into account, then report again.\n\n";
  return out;
}

std::string skills_section(const std::vector<std::string>& skills) {
  std::string out;
  for (auto& s : skills) {
    auto skill = trimmed(s);
    if (!skill.empty())
      out += "- " + skill + "\n";
  }
  if (out.empty())
    return out;
  return "## Skills\n\nUse these skills while you work on the task:\n\n" + out
         + "\n";
}

std::string without_trailing_blank_lines(std::string text) {
  while (text.size() > 1 && text[text.size() - 1] == '\n'
         && text[text.size() - 2] == '\n')
    text.pop_back();
  return text;
}

} // namespace

// The example block is deliberately not valid JSON: an agent that echoes
// its prompt and stops must not pass the example off as its report.
std::string worker_contract_text() {
  return "## How to report\n\n"
         "Work only inside the current directory, which is a git worktree of "
         "its own. Do not commit, merge or switch branches: your changes are "
         "checked, committed and merged for you.\n\n"
         "When you are finished, end your final message with exactly one "
         "fenced JSON block, as the last thing you print:\n\n"
         "```json\n"
         "{\"status\": \"done\" or \"blocked\", \"summary\": \"one line\", "
         "\"files\": [\"every path you changed\"]}\n"
         "```\n\n"
         "Report `\"status\": \"done\"` when the task is complete. If you "
         "cannot finish (a decision is needed, a file outside your write "
         "scope must change, something is missing), stop and report "
         "`\"status\": \"blocked\"` with the reason in `\"summary\"`. You may "
         "add `\"usage\": {\"input_tokens\": N, \"output_tokens\": N, "
         "\"cost_usd\": X}`. If you cannot print JSON, end with a line "
         "`[task:done]` or `[task:blocked] <reason>` instead. Without a "
         "report the attempt counts as failed.\n";
}

std::string compose_prompt(const prompt_request& r) {
  std::ostringstream out;
  out << "# Task " << r.task_id << ": " << trimmed(r.title) << "\n\n";
  auto body = trimmed(r.body);
  if (!body.empty())
    out << body << "\n\n";
  out << "## Write scope\n\n";
  if (r.files.empty()) {
    out << "No files are declared for this task. Change as little as "
           "possible, and report blocked if the task needs a wider scope.\n\n";
  } else {
    out << "Change only these paths (globs: `*` and `?` within a name, `**` "
           "across folders); a change anywhere else fails the task:\n\n";
    for (auto& f : r.files)
      out << "- `" << f << "`\n";
    out << '\n';
  }
  if (!r.verify.empty())
    out << "## Verification\n\nYour work is accepted only if this command "
           "passes in the current directory:\n\n"
        << fence_for(r.verify) << "sh\n"
        << r.verify << '\n'
        << fence_for(r.verify) << "\n\n";
  if (!r.previous_failure.empty())
    out << "## Previous attempt\n\nAn earlier attempt at this task failed: "
        << trimmed(r.previous_failure) << "\n\n";
  if (r.repair_round > 0)
    out << repair_section(r.repair_round, r.gate_result, r.gate_tail,
                          r.by_verifier);
  out << mail_sections(r.answers, r.messages);
  if (r.contract)
    out << worker_contract_text() << '\n';
  out << skills_section(r.skills);
  auto extra = trimmed(r.instructions);
  auto file_extra = trimmed(r.instructions_file_text);
  if (!extra.empty() || !file_extra.empty()) {
    out << "## Instructions\n\n";
    if (!extra.empty())
      out << extra << "\n\n";
    if (!file_extra.empty())
      out << file_extra << "\n\n";
  }
  return without_trailing_blank_lines(out.str());
}

std::string compose_follow_up(const turn_input& turn, bool contract) {
  std::string out;
  if (turn.kind == turn_kind::repair)
    out += repair_section(turn.repair_round, turn.gate_result, turn.gate_tail,
                          turn.by_verifier);
  out += mail_sections(turn.answers, turn.messages);
  // No marker and no JSON here: an agent that echoes this prompt and
  // stops must not pass it off as its report.
  if (!contract) {
    out += "When you are finished, report again as your instructions ask.\n";
    return without_trailing_blank_lines(out);
  }
  out += "When you are finished, end your final message with your report "
         "exactly as the task's instructions asked at the start: the fenced "
         "JSON block with status done or blocked, summary and files, as the "
         "last thing you print.\n";
  return without_trailing_blank_lines(out);
}

std::string read_instructions_file(const std::string& path,
                                   const std::string& repo) {
  if (path.empty())
    return {};
  fs::path file = path;
  if (file.is_relative() && !repo.empty())
    file = fs::path{repo} / file;
  auto text = read_file(file);
  if (!text)
    throw std::runtime_error("run.workerInstructionsFile: cannot read "
                             + file.string() + ": " + std::strerror(errno));
  return *text;
}

} // namespace taskforce
