#include "src/cli/cli.hpp"

#include <cstdio>
#include <filesystem>
#include <iostream>

#include <git2.h>

#include "src/cli/args.hpp"
#include "src/log/logging.hpp"
#include "src/store/ledger.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

namespace {

void print_overview(std::ostream& out) {
  out << "usage: taskforce [--config FILE] [--repo DIR] [--log-level LEVEL] "
         "<command> [args]\n\n"
         "Admits, schedules, isolates, verifies and merges the work of AI "
         "coding subagents.\n\ncommands:\n";
  for (const auto& cmd : commands()) {
    if (*cmd.summary == '\0')
      continue; // a hidden command
    std::string name = cmd.name;
    name.resize(std::max<size_t>(name.size() + 2, 10), ' ');
    out << "  " << name << cmd.summary << '\n';
  }
  out << "\nRun `taskforce help <command>` (or `taskforce <command> --help`) "
         "for a command's\noptions.\n"
         "Exit status: 0 success, 1 the work failed or paused, 2 bad input.\n"
         "Log level: --log-level or TASKFORCE_LOG ("
      << log_level_names << "; default warn).\n";
}

/// Takes the global options out of `argv`, wherever they stand.
std::vector<std::string> take_global_options(std::vector<std::string> argv,
                                             global_options& opts) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < argv.size(); ++i) {
    auto take = [&](const char* name, std::string& out) {
      std::string flag = name;
      if (argv[i] == flag) {
        if (i + 1 >= argv.size())
          throw usage_error("option " + flag + " needs a value");
        out = argv[++i];
        return true;
      }
      if (argv[i].rfind(flag + "=", 0) == 0) {
        out = argv[i].substr(flag.size() + 1);
        return true;
      }
      return false;
    };
    if (argv[i] == "--") {
      rest.insert(rest.end(), argv.begin() + i, argv.end());
      break;
    }
    if (take("--config", opts.config_file) || take("--repo", opts.repo)
        || take("--log-level", opts.log_level))
      continue;
    rest.push_back(argv[i]);
  }
  return rest;
}

/// The command called `name` (hidden ones too), or nullptr.
const command* find_command(const std::string& name) {
  for (const auto& cmd : commands())
    if (name == cmd.name)
      return &cmd;
  return nullptr;
}

/// The usage_error for `word`, a command no one knows, with the nearest
/// listed one (a task file given without `run`: the `run` to type).
usage_error unknown_command(const std::string& word) {
  std::vector<std::string> names{"help"};
  for (const auto& cmd : commands())
    if (*cmd.summary != '\0')
      names.emplace_back(cmd.name);
  auto hint = did_you_mean(word, names);
  std::error_code ec;
  if (hint.empty() && fs::is_regular_file(word, ec))
    hint = " (to run a task file: taskforce run " + word + ")";
  return usage_error("unknown command \"" + word + "\"" + hint
                     + "; see taskforce --help");
}

} // namespace

std::optional<std::string> find_repository(const std::string& start) {
  std::error_code ec;
  auto dir
    = fs::absolute(start.empty() ? fs::current_path() : fs::path{start}, ec);
  if (ec)
    return std::nullopt;
  for (auto p = dir.lexically_normal(); !p.empty(); p = p.parent_path()) {
    if (fs::exists(p / ".git", ec))
      return p.string();
    if (p == p.root_path())
      break;
  }
  return std::nullopt;
}

std::string repository_of(const global_options& opts) {
  if (!opts.repo.empty()) {
    std::error_code ec;
    if (!fs::is_directory(opts.repo, ec))
      throw usage_error("--repo " + opts.repo + ": no such directory");
    auto top = find_repository(opts.repo);
    if (!top)
      throw usage_error("--repo " + opts.repo
                        + ": not inside a git repository");
    return *top;
  }
  auto top = find_repository("");
  if (!top)
    throw usage_error("not inside a git repository (use --repo DIR)");
  return *top;
}

config effective_config(const global_options& opts) {
  if (!opts.config_file.empty())
    return load_config(opts.config_file);
  auto top
    = opts.repo.empty() ? find_repository("") : find_repository(opts.repo);
  if (top) {
    auto local = fs::path{*top} / ".taskforce" / "config.json";
    std::error_code ec;
    if (fs::exists(local, ec))
      return load_config(local.string());
  }
  return config{};
}

int main(int argc, char** argv) {
  std::vector<std::string> all(argv + 1, argv + argc);
  global_options opts;
  try {
    auto rest = take_global_options(all, opts);
    if (rest.empty() || rest[0] == "--help" || rest[0] == "-h") {
      print_overview(std::cout);
      return rest.empty() ? exit_usage : exit_ok;
    }
    if (rest[0] == "--version") {
      std::cout << "taskforce " << TASKFORCE_VERSION << '\n';
      return exit_ok;
    }
    if (rest[0] == "help") {
      // `help` alone is the overview; `help CMD` is what `CMD --help` says.
      if (rest.size() == 1 || rest[1] == "help" || rest[1] == "--help"
          || rest[1] == "-h") {
        print_overview(std::cout);
        return exit_ok;
      }
      auto* wanted = find_command(rest[1]);
      if (wanted == nullptr)
        throw unknown_command(rest[1]);
      std::cout << wanted->help;
      return exit_ok;
    }
    // An option before the command that no one takes is a misspelt
    // option, not a command.
    if (rest[0].size() > 1 && rest[0][0] == '-' && rest[0] != "--")
      throw usage_error(
        unknown_option_message(rest[0], {"--help", "--version"}));
    const command* chosen = find_command(rest[0]);
    if (chosen == nullptr)
      throw unknown_command(rest[0]);
    std::vector<std::string> args(rest.begin() + 1, rest.end());
    for (const auto& arg : args) {
      if (arg == "--")
        break;
      if (arg == "--help" || arg == "-h") {
        std::cout << chosen->help;
        return exit_ok;
      }
    }
    setup_logging(opts.log_level);
    git_libgit2_init();
    struct git_shutdown {
      ~git_shutdown() {
        git_libgit2_shutdown();
      }
    } git_guard;
    return chosen->run(args, opts);
  } catch (const usage_error& e) {
    std::cerr << "taskforce: " << e.what() << '\n';
    return exit_usage;
  } catch (const config_error& e) {
    std::cerr << "taskforce: " << e.what() << '\n';
    return exit_usage;
  } catch (const store::ledger_error& e) {
    // A ledger that is not one (or is too new) is the user's to fix.
    std::cerr << "taskforce: " << e.what() << '\n';
    return e.code() == store::ledger_errc::schema ? exit_usage : exit_failed;
  } catch (const std::invalid_argument& e) {
    std::cerr << "taskforce: " << e.what() << '\n';
    return exit_usage;
  } catch (const std::exception& e) {
    std::cerr << "taskforce: " << e.what() << '\n';
    return exit_failed;
  }
}

} // namespace taskforce::cli
