/*
 * Part of oxnet/lib_api.h (included by it; do not include directly): the
 * JSON values (the reference's JsonVal) that graphs are read from and written to.
 */
#ifndef OXNET_LIB_API_H_
#error "include oxnet/lib_api.h, not this part of it"
#endif
#ifndef OXNET_LIB_API_JSON_H_
#define OXNET_LIB_API_JSON_H_

namespace oxnet {
namespace ext {

/** Kinds of JSON values (the reference's names). Numbers are integers; a
 *  number with a fraction or exponent, `true`, `false` and `null` are kept as
 *  NUM with their text in `str`. */
enum JsonType { ERR, STR, NUM, LIST, MAP };

/** A JSON value: a string, a number, a list or a map. */
struct JsonVal {
  /** An invalid value (ERR). */
  JsonVal() : type(ERR), num(-1) {}
  /** An empty value of type `t`. */
  explicit JsonVal(JsonType t) : type(t), num(-1) {}
  /** A string. */
  explicit JsonVal(std::string s) : type(STR), num(-1), str(std::move(s)) {}
  /** A number. */
  explicit JsonVal(int n) : type(NUM), num(n) {}
  /** A value of type `t` with number `n` and text `s`. */
  JsonVal(JsonType t, int n, std::string s) : type(t), num(n), str(std::move(s)) {}

  /** An order on values (by type, then content), so that they can key a map. */
  bool operator<(const JsonVal& o) const {
    if (type != o.type) return type < o.type;
    switch (type) {
      case STR: return str < o.str;
      case NUM: return num != o.num ? num < o.num : str < o.str;
      case LIST: return list < o.list;
      case MAP: return map < o.map;
      default: return false;
    }
  }

  /** The value as compact JSON text. */
  std::string dump() const {
    std::string out;
    dump_into(out);
    return out;
  }

  /** Parses a whole JSON text; throws std::runtime_error naming the offset of a mistake. */
  static JsonVal parse(const std::string& json) {
    unsigned int idx = 0;
    JsonVal v = parse(json, &idx);
    skip_space(json, &idx);
    if (idx != json.size()) fail_at(json, idx, "unexpected text after the value");
    return v;
  }
  /** Parses the string starting at `*idx` (at its opening quote). */
  static JsonVal parse_string(const std::string& json, unsigned int* idx) {
    JsonVal v(STR);
    ++*idx;  // opening quote
    for (;;) {
      if (*idx >= json.size()) fail_at(json, *idx, "unterminated string");
      char c = json[(*idx)++];
      if (c == '"') return v;
      if (static_cast<unsigned char>(c) < 0x20) fail_at(json, *idx - 1, "control character in a string");
      if (c != '\\') {
        v.str += c;
        continue;
      }
      if (*idx >= json.size()) fail_at(json, *idx, "unterminated string");
      char e = json[(*idx)++];
      switch (e) {
        case '"': v.str += '"'; break;
        case '\\': v.str += '\\'; break;
        case '/': v.str += '/'; break;
        case 'b': v.str += '\b'; break;
        case 'f': v.str += '\f'; break;
        case 'n': v.str += '\n'; break;
        case 'r': v.str += '\r'; break;
        case 't': v.str += '\t'; break;
        case 'u': {
          uint32_t cp = hex4(json, idx);
          if (cp >= 0xd800 && cp < 0xdc00 && *idx + 1 < json.size() && json[*idx] == '\\' && json[*idx + 1] == 'u') {
            *idx += 2;
            uint32_t lo = hex4(json, idx);
            if (lo < 0xdc00 || lo >= 0xe000) fail_at(json, *idx, "unpaired UTF-16 surrogate");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          put_utf8(v.str, cp);
          break;
        }
        default: fail_at(json, *idx - 1, "unknown escape in a string");
      }
    }
  }
  /** Parses the number (or true/false/null) starting at `*idx`. */
  static JsonVal parse_num(const std::string& json, unsigned int* idx) {
    unsigned int start = *idx;
    for (const char* word : {"true", "false", "null"}) {
      if (json.compare(start, strlen(word), word) == 0) {
        *idx += static_cast<unsigned int>(strlen(word));
        return JsonVal(NUM, word[0] == 't' ? 1 : 0, word);
      }
    }
    if (*idx < json.size() && json[*idx] == '-') ++*idx;
    bool integral = true, digits = false;
    while (*idx < json.size()) {
      char c = json[*idx];
      if (c >= '0' && c <= '9') {
        digits = true;
      } else if (c == '.' || c == 'e' || c == 'E' || ((c == '+' || c == '-') && integral == false)) {
        integral = false;
      } else {
        break;
      }
      ++*idx;
    }
    if (!digits) fail_at(json, start, "expected a value");
    std::string text = json.substr(start, *idx - start);
    errno = 0;
    char* end = nullptr;
    long long n = strtoll(text.c_str(), &end, 10);
    if (integral && errno == 0 && end && *end == '\0' && n >= std::numeric_limits<int>::min() &&
        n <= std::numeric_limits<int>::max()) {
      return JsonVal(static_cast<int>(n));
    }
    return JsonVal(NUM, static_cast<int>(strtod(text.c_str(), nullptr)), text);
  }
  /** Parses the list starting at `*idx` (at its '['). */
  static JsonVal parse_list(const std::string& json, unsigned int* idx) {
    JsonVal v(LIST);
    ++*idx;
    skip_space(json, idx);
    if (*idx < json.size() && json[*idx] == ']') {
      ++*idx;
      return v;
    }
    for (;;) {
      v.list.push_back(parse(json, idx));
      skip_space(json, idx);
      if (*idx >= json.size()) fail_at(json, *idx, "unterminated list");
      char c = json[(*idx)++];
      if (c == ']') return v;
      if (c != ',') fail_at(json, *idx - 1, "expected ',' or ']' in a list");
    }
  }
  /** Parses the map starting at `*idx` (at its '{'). */
  static JsonVal parse_map(const std::string& json, unsigned int* idx) {
    JsonVal v(MAP);
    ++*idx;
    skip_space(json, idx);
    if (*idx < json.size() && json[*idx] == '}') {
      ++*idx;
      return v;
    }
    for (;;) {
      skip_space(json, idx);
      if (*idx >= json.size() || json[*idx] != '"') fail_at(json, *idx, "expected a string key in a map");
      JsonVal key = parse_string(json, idx);
      skip_space(json, idx);
      if (*idx >= json.size() || json[*idx] != ':') fail_at(json, *idx, "expected ':' after a map key");
      ++*idx;
      v.map[key] = parse(json, idx);
      skip_space(json, idx);
      if (*idx >= json.size()) fail_at(json, *idx, "unterminated map");
      char c = json[(*idx)++];
      if (c == '}') return v;
      if (c != ',') fail_at(json, *idx - 1, "expected ',' or '}' in a map");
    }
  }
  /** Parses the value starting at `*idx` (after optional spaces). */
  static JsonVal parse(const std::string& json, unsigned int* idx) {
    struct Depth {  // nesting limit: malformed input never overflows the stack
      int& d;
      explicit Depth(int& x) : d(x) { ++d; }
      ~Depth() { --d; }
    };
    thread_local int depth = 0;
    Depth guard(depth);
    if (depth > 256) fail_at(json, *idx, "values nested more than 256 deep");
    skip_space(json, idx);
    if (*idx >= json.size()) fail_at(json, *idx, "expected a value, found the end of the text");
    switch (json[*idx]) {
      case '"': return parse_string(json, idx);
      case '[': return parse_list(json, idx);
      case '{': return parse_map(json, idx);
      default: return parse_num(json, idx);
    }
  }

  /** A readable rendering (for debugging): the JSON text. */
  std::string toString() const { return dump(); }

  /** The kind of value. */
  JsonType type;
  /** The number (NUM). */
  int num;
  /** The text (STR; for NUM, the literal when it is not a plain int). */
  std::string str;
  /** The elements (LIST). */
  std::vector<JsonVal> list;
  /** The entries (MAP; keys are STR values). */
  std::map<JsonVal, JsonVal> map;

 private:
  static void skip_space(const std::string& json, unsigned int* idx) {
    while (*idx < json.size() && (json[*idx] == ' ' || json[*idx] == '\t' || json[*idx] == '\n' || json[*idx] == '\r')) {
      ++*idx;
    }
  }
  [[noreturn]] static void fail_at(const std::string& json, unsigned int idx, const char* what) {
    (void)json;
    throw std::runtime_error("malformed JSON at offset " + std::to_string(idx) + ": " + what);
  }
  static uint32_t hex4(const std::string& json, unsigned int* idx) {
    if (*idx + 4 > json.size()) fail_at(json, *idx, "short \\u escape");
    uint32_t cp = 0;
    for (int i = 0; i < 4; ++i) {
      char h = json[(*idx)++];
      cp <<= 4;
      if (h >= '0' && h <= '9') cp |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') cp |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') cp |= static_cast<uint32_t>(h - 'A' + 10);
      else fail_at(json, *idx - 1, "bad hex digit in a \\u escape");
    }
    return cp;
  }
  static void put_utf8(std::string& s, uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xe0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      s += static_cast<char>(0xf0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  static void quote(std::string& out, const std::string& s) {
    out += '"';
    for (char c : s) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out += buf;
          } else {
            out += c;
          }
      }
    }
    out += '"';
  }
  void dump_into(std::string& out) const {
    switch (type) {
      case STR: quote(out, str); break;
      case NUM: out += str.empty() ? std::to_string(num) : str; break;
      case LIST:
        out += '[';
        for (size_t i = 0; i < list.size(); ++i) {
          if (i) out += ", ";
          list[i].dump_into(out);
        }
        out += ']';
        break;
      case MAP: {
        out += '{';
        bool first = true;
        for (const auto& kv : map) {
          if (!first) out += ", ";
          first = false;
          quote(out, kv.first.type == STR ? kv.first.str : kv.first.dump());
          out += ": ";
          kv.second.dump_into(out);
        }
        out += '}';
        break;
      }
      default: out += "null"; break;
    }
  }
};

}  // namespace ext
}  // namespace oxnet

#endif  // OXNET_LIB_API_JSON_H_
