// Every relative link in the project's markdown (README.md, docs/, the
// READMEs beside config and integrations) points at a file in the
// repository, and every #anchor at a heading that exists there; every page of
// docs/ is reachable from the README; every docs/ page the program's own
// texts name exists.
#define CAF_SUITE unit.doc_links
#include <caf/test/unit_test.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "src/text/file.hpp"
#include "test.hpp"

namespace fs = std::filesystem;

namespace {

/// Whether `line` opens or closes a fenced code block.
bool is_fence(const std::string& line) {
  auto s = line.find_first_not_of(' ');
  return s != std::string::npos && s <= 3
         && (line.compare(s, 3, "```") == 0 || line.compare(s, 3, "~~~") == 0);
}

/// `line` without its inline code spans (a backtick run up to the next run
/// of the same length), so a link written as code is not taken for a link.
std::string without_code_spans(const std::string& line) {
  std::string out;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] != '`') {
      out += line[i++];
      continue;
    }
    size_t run = line.find_first_not_of('`', i) - i;
    if (i + run > line.size())
      run = line.size() - i;
    std::string ticks(run, '`');
    auto close = line.find(ticks, i + run);
    // An unclosed run is literal text.
    if (close == std::string::npos) {
      out += ticks;
      i += run;
      continue;
    }
    i = close + run;
  }
  return out;
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces
/// to hyphens.
std::string slug(const std::string& heading) {
  std::string out;
  for (unsigned char c : heading) {
    if (std::isalnum(c) || c == '-' || c == '_')
      out += static_cast<char>(std::tolower(c));
    else if (c == ' ')
      out += '-';
  }
  return out;
}

/// The anchors a markdown text offers: its headings' (a repeated heading
/// gets -1, -2, ...) and explicit `<a id=…>` / `<a name=…>`.
std::set<std::string> anchors_of(const std::string& text) {
  std::set<std::string> out;
  std::map<std::string, int> seen;
  static const std::regex heading{R"re(^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$)re"};
  static const std::regex explicit_anchor{R"re(<a\s+(?:id|name)="([^"]+)")re"};
  std::istringstream in{text};
  bool fenced = false;
  for (std::string line; std::getline(in, line);) {
    if (is_fence(line)) {
      fenced = !fenced;
      continue;
    }
    if (fenced)
      continue;
    std::smatch m;
    if (std::regex_match(line, m, heading)) {
      auto s = slug(m[1].str());
      auto n = seen[s]++;
      out.insert(n == 0 ? s : s + "-" + std::to_string(n));
    }
    for (std::sregex_iterator i{line.begin(), line.end(), explicit_anchor}, e;
         i != e; ++i)
      out.insert((*i)[1].str());
  }
  return out;
}

struct link {
  size_t line;
  std::string target;
};

/// The link targets of a markdown text, outside code: `[text](target)`,
/// `![alt](target)` and reference definitions `[name]: target`.
std::vector<link> links_of(const std::string& text) {
  std::vector<link> out;
  static const std::regex inline_link{
    R"re(\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\))re"};
  static const std::regex definition{
    R"re(^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?)re"};
  std::istringstream in{text};
  bool fenced = false;
  size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (is_fence(line)) {
      fenced = !fenced;
      continue;
    }
    if (fenced)
      continue;
    auto prose = without_code_spans(line);
    for (std::sregex_iterator i{prose.begin(), prose.end(), inline_link}, e;
         i != e; ++i)
      out.push_back({number, (*i)[1].str()});
    std::smatch m;
    if (std::regex_search(prose, m, definition))
      out.push_back({number, m[1].str()});
  }
  return out;
}

bool has_scheme(const std::string& target) {
  static const std::regex scheme{R"re(^[A-Za-z][A-Za-z0-9+.-]*:)re"};
  return std::regex_search(target, scheme);
}

std::string text_of(const fs::path& file) {
  auto text = taskforce::read_file(file);
  if (!text)
    throw std::runtime_error("cannot read " + file.string());
  return *text;
}

/// What is wrong with the links of `file` (inside `root`), one message each:
/// `FILE:LINE: TARGET: reason`.
std::vector<std::string> broken_links(const fs::path& root,
                                      const fs::path& file) {
  std::vector<std::string> problems;
  auto top = fs::weakly_canonical(root);
  auto name = fs::relative(file, root).string();
  for (auto& l : links_of(text_of(file))) {
    auto where = name + ":" + std::to_string(l.line) + ": " + l.target + ": ";
    if (l.target.empty() || has_scheme(l.target))
      continue; // a web address or mail is not a file of the repository
    auto hash = l.target.find('#');
    auto path = l.target.substr(0, hash);
    auto anchor
      = hash == std::string::npos ? std::string{} : l.target.substr(hash + 1);
    if (!path.empty() && path[0] == '/') {
      problems.push_back(where + "an absolute path; link relative to the file");
      continue;
    }
    auto target = path.empty()
                    ? fs::weakly_canonical(file)
                    : fs::weakly_canonical(file.parent_path() / path);
    auto rel = target.lexically_relative(top);
    if (rel.empty() || *rel.begin() == "..") {
      problems.push_back(where + "leads out of the repository");
      continue;
    }
    if (!fs::exists(target)) {
      problems.push_back(where + "no such file in the repository");
      continue;
    }
    if (anchor.empty())
      continue;
    if (target.extension() != ".md" || fs::is_directory(target)) {
      static const std::regex line_anchor{R"re(^L\d+(-L\d+)?$)re"};
      if (!std::regex_match(anchor, line_anchor))
        problems.push_back(where
                           + "an anchor into a file that has no headings");
      continue;
    }
    if (anchors_of(text_of(target)).count(anchor) == 0)
      problems.push_back(where + "no heading #" + anchor + " in "
                         + rel.string());
  }
  return problems;
}

/// The project's markdown files: everything under `root` but the tests,
/// build folders, hidden folders and installed node packages.
std::vector<fs::path> markdown_files(const fs::path& root) {
  std::vector<fs::path> out;
  for (auto i = fs::recursive_directory_iterator{root};
       i != fs::recursive_directory_iterator{}; ++i) {
    auto name = i->path().filename().string();
    if (i->is_directory()
        && (name.rfind('.', 0) == 0 || name.rfind("build", 0) == 0
            || name == "node_modules"
            || (i.depth() == 0 && (name == "tests" || name == "examples")))) {
      i.disable_recursion_pending();
      continue;
    }
    if (i->is_regular_file() && i->path().extension() == ".md")
      out.push_back(i->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (auto& l : lines)
    out += "\n  " + l;
  return out;
}

const fs::path source_dir{TASKFORCE_SOURCE_DIR};

} // namespace

CAF_TEST(the checker finds a missing file a missing anchor and a way out) {
  taskforce::test::temp_dir dir;
  auto repo = dir.path() / "repo";
  dir.write("repo/docs/a.md", "# Page A\n\n## The `pool`: rules\n\n"
                              "## Twice\n\n## Twice\n\n<a id=\"custom\"></a>\n"
                              "```\n## Not a heading\n```\n");
  dir.write("repo/src/x.cpp", "int x;\n");
  dir.write("outside.md", "# Outside\n");
  dir.write("repo/README.md",
            "See [a](docs/a.md), [rules](docs/a.md#the-pool-rules),\n"
            "[twice](docs/a.md#twice-1), [custom](docs/a.md#custom),\n"
            "[line](src/x.cpp#L1), [web](https://example.com/x.md),\n"
            "[self](#top), `[code](nowhere.md)`, [docs](docs/).\n"
            "# Top\n"
            "```\n[fenced](nowhere-either.md)\n```\n"
            "Broken: [gone](docs/gone.md) and [anchor](docs/a.md#absent)\n"
            "and [fenced heading](docs/a.md#not-a-heading),\n"
            "[out](../outside.md), [abs](/docs/a.md),\n"
            "[three](docs/a.md#twice-2), [code anchor](src/x.cpp#main).\n"
            "[ref]: docs/also-gone.md\n");
  auto problems = broken_links(repo, repo / "README.md");
  std::vector<std::string> expected{
    "README.md:9: docs/gone.md: no such file in the repository",
    "README.md:9: docs/a.md#absent: no heading #absent in docs/a.md",
    "README.md:10: docs/a.md#not-a-heading: no heading #not-a-heading in "
    "docs/a.md",
    "README.md:11: ../outside.md: leads out of the repository",
    "README.md:11: /docs/a.md: an absolute path; link relative to the file",
    "README.md:12: docs/a.md#twice-2: no heading #twice-2 in docs/a.md",
    "README.md:12: src/x.cpp#main: an anchor into a file that has no headings",
    "README.md:13: docs/also-gone.md: no such file in the repository",
  };
  CAF_CHECK_EQUAL(joined(problems), joined(expected));
}

CAF_TEST(
  every link in the markdown of the project points at a file and heading) {
  auto files = markdown_files(source_dir);
  CAF_REQUIRE(std::count(files.begin(), files.end(), source_dir / "README.md")
              == 1);
  CAF_REQUIRE(fs::exists(source_dir / "docs" / "cli.md"));
  std::vector<std::string> problems;
  for (auto& f : files)
    for (auto& p : broken_links(source_dir, f))
      problems.push_back(p);
  CAF_CHECK_EQUAL(joined(problems), "");
} // namespace

CAF_TEST(every page of docs is reachable from the README) {
  // Pages linked from README.md, and from the pages those link, and so on.
  std::set<fs::path> reached;
  std::vector<fs::path> todo{fs::weakly_canonical(source_dir / "README.md")};
  while (!todo.empty()) {
    auto file = todo.back();
    todo.pop_back();
    if (!reached.insert(file).second)
      continue;
    for (auto& l : links_of(text_of(file))) {
      if (has_scheme(l.target))
        continue;
      auto path = l.target.substr(0, l.target.find('#'));
      if (path.empty())
        continue;
      auto target = fs::weakly_canonical(file.parent_path() / path);
      if (target.extension() == ".md" && fs::exists(target))
        todo.push_back(target);
    }
  }
  std::vector<std::string> orphans;
  for (auto& f : markdown_files(source_dir / "docs"))
    if (reached.count(fs::weakly_canonical(f)) == 0)
      orphans.push_back(fs::relative(f, source_dir).string());
  CAF_CHECK_EQUAL(joined(orphans), "");
}

CAF_TEST(the pages the program names in its own texts exist) {
  // --help texts and messages send readers to docs/<page>.md.
  static const std::regex page{R"re(docs/[A-Za-z0-9_-]+\.md)re"};
  std::vector<std::string> missing;
  size_t named = 0;
  for (auto dir : {"src", "actors", "include", "config"})
    for (auto& e : fs::recursive_directory_iterator{source_dir / dir}) {
      if (!e.is_regular_file())
        continue;
      auto text = text_of(e.path());
      for (std::sregex_iterator i{text.begin(), text.end(), page}, end;
           i != end; ++i) {
        ++named;
        if (!fs::exists(source_dir / (*i)[0].str()))
          missing.push_back(fs::relative(e.path(), source_dir).string() + ": "
                            + (*i)[0].str());
      }
    }
  CAF_CHECK(named > 0); // serve --help names the protocol's page
  CAF_CHECK_EQUAL(joined(missing), "");
}
