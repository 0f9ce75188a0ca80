#include "src/text/json_reader.hpp"

#include <utility>

#include <nlohmann/json.hpp>

namespace taskforce {

namespace {

using json = nlohmann::json;

/// Builds the document from the parser's events, as the library's own
/// builder does, keeping what json_reader.hpp promises. Never throws.
class bounded_builder : public json::json_sax_t {
 public:
  bounded_builder(json& root, json_read_result& result,
                  const json_read_options& opts)
    : root_(root), result_(result), opts_(opts) {}

  bool null() override {
    return put(nullptr);
  }
  bool boolean(bool x) override {
    return put(x);
  }
  bool number_integer(number_integer_t x) override {
    return put(x);
  }
  bool number_unsigned(number_unsigned_t x) override {
    return put(x);
  }
  bool number_float(number_float_t x, const string_t& text) override {
    if (skip_ == 0 && opts_.on_float)
      opts_.on_float(x, text, open_path());
    return put(x);
  }
  bool string(string_t& x) override {
    return put(std::move(x));
  }
  bool binary(binary_t& x) override {
    return put(std::move(x));
  }
  bool start_object(std::size_t) override {
    return open(json::value_t::object);
  }
  bool start_array(std::size_t) override {
    return open(json::value_t::array);
  }
  bool key(string_t& k) override {
    if (skip_ > 0)
      return true;
    auto& top = frames_.back();
    if (opts_.refuse_duplicate_keys && top.value->contains(k)) {
      top.key = k;
      top.key_open = false;
      stop(json_read_result::problem::duplicate_key);
      result_.token = k;
      return false;
    }
    top.key = std::move(k);
    top.key_open = true;
    return true;
  }
  bool end_object() override {
    return close();
  }
  bool end_array() override {
    return close();
  }
  bool parse_error(std::size_t, const std::string& last_token,
                   const nlohmann::detail::exception& e) override {
    // 406: a number beyond the range of a double (1e400).
    if (e.id == 406) {
      stop(json_read_result::problem::out_of_range);
      result_.token = last_token;
    } else {
      stop(json_read_result::problem::syntax);
    }
    std::string text = e.what();
    if (auto pos = text.find("] "); pos != std::string::npos)
      text = text.substr(pos + 2);
    result_.detail = std::move(text);
    return false;
  }

 private:
  struct frame {
    json* value = nullptr;
    std::string key;
    /// The key's value is being read.
    bool key_open = false;
  };

  /// The keys whose values are being read, outermost first.
  std::vector<std::string> open_path() const {
    std::vector<std::string> result;
    for (auto& f : frames_) {
      if (!f.value->is_object() || !f.key_open)
        break;
      result.push_back(f.key);
    }
    return result;
  }

  void stop(json_read_result::problem kind) {
    result_.kind = kind;
    result_.path = open_path();
    result_.inside = frames_.size() > result_.path.size();
  }

  /// Where the next value goes.
  json* slot() {
    if (frames_.empty())
      return &root_;
    auto& top = frames_.back();
    if (top.value->is_object())
      return &(*top.value)[top.key];
    top.value->push_back(nullptr);
    return &top.value->back();
  }

  bool put(json&& x) {
    if (skip_ > 0)
      return true;
    *slot() = std::move(x);
    if (!frames_.empty())
      frames_.back().key_open = false;
    return true;
  }

  bool open(json::value_t type) {
    if (skip_ > 0) {
      ++skip_;
      return true;
    }
    if (frames_.size() >= opts_.max_depth) {
      if (!opts_.skip_too_deep) {
        stop(json_read_result::problem::too_deep);
        return false;
      }
      if (!result_.skipped_any) {
        result_.skipped_any = true;
        result_.skipped = open_path();
      }
      skip_ = 1;
      return true;
    }
    auto target = slot();
    *target = json(type);
    frames_.push_back(frame{target, {}, false});
    return true;
  }

  bool close() {
    if (skip_ > 0) {
      // The skipped value ends with its outermost container: the key that
      // held it is read.
      if (--skip_ == 0 && !frames_.empty())
        frames_.back().key_open = false;
      return true;
    }
    frames_.pop_back();
    if (!frames_.empty())
      frames_.back().key_open = false;
    return true;
  }

  json& root_;
  json_read_result& result_;
  const json_read_options& opts_;
  std::vector<frame> frames_;
  /// Open containers inside a value left out.
  size_t skip_ = 0;
};

} // namespace

json_read_result read_json(const char* first, const char* last, json& out,
                           const json_read_options& opts) {
  json_read_result result;
  out = nullptr;
  bounded_builder builder{out, result, opts};
  json::sax_parse(first, last, &builder);
  if (!result.ok())
    out = nullptr;
  return result;
}

} // namespace taskforce
