#include "runtime/bootstrap_pmi2_wire.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace ulmpi::rt::pmi2 {
namespace {

// Strict non-negative decimal integer of at most 9 digits.
bool parse_uint(std::string_view s, long& out)
{
    if (s.empty() || s.size() > 9) {
        return false;
    }
    long v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') {
            return false;
        }
        v = v * 10 + (c - '0');
    }
    out = v;
    return true;
}

std::string_view trim(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' ||
                          s.back() == '\r')) {
        s.remove_suffix(1);
    }
    return s;
}

int hex_digit(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

} // namespace

const std::string* Message::find(std::string_view key) const
{
    for (const auto& [k, v] : fields) {
        if (k == key) {
            return &v;
        }
    }
    return nullptr;
}

int Message::rc() const
{
    const std::string* v = find("rc");
    if (v == nullptr) {
        return 0;
    }
    std::string_view s = *v;
    bool neg = !s.empty() && s.front() == '-';
    if (neg) {
        s.remove_prefix(1);
    }
    long x = 0;
    if (!parse_uint(s, x)) {
        return -1;
    }
    return static_cast<int>(neg ? -x : x);
}

std::string init_line() { return "cmd=init pmi_version=2 pmi_subversion=0\n"; }

bool check_init_response(std::string_view line, std::string& why)
{
    line = trim(line);
    std::string_view cmd, rc = "0", version, subversion;
    while (!line.empty()) {
        std::size_t sp = line.find(' ');
        std::string_view word = line.substr(0, sp);
        line = sp == std::string_view::npos ? std::string_view() : trim(line.substr(sp + 1));
        std::size_t eq = word.find('=');
        if (eq == std::string_view::npos) {
            why = "word '" + std::string(word) + "' in the init answer has no '='";
            return false;
        }
        std::string_view k = word.substr(0, eq);
        std::string_view v = word.substr(eq + 1);
        if (k == "cmd") {
            cmd = v;
        } else if (k == "rc") {
            rc = v;
        } else if (k == "pmi_version") {
            version = v;
        } else if (k == "pmi_subversion") {
            subversion = v;
        }
    }
    if (cmd != "response_to_init") {
        why = "the launcher answered the init with cmd='" + std::string(cmd) + "'";
        return false;
    }
    if (rc != "0") {
        why = "the launcher refused PMI version 2.0 (rc=" + std::string(rc) + ")";
        return false;
    }
    if (version != "2" || subversion != "0") {
        why = "the launcher speaks PMI " + std::string(version) + "." + std::string(subversion) +
              ", not 2.0";
        return false;
    }
    return true;
}

std::string encode(std::string_view cmd,
                   const std::vector<std::pair<std::string, std::string>>& fields)
{
    std::string body = "cmd=";
    body += cmd;
    body += ';';
    for (const auto& [k, v] : fields) {
        body += k;
        body += '=';
        for (char c : v) {
            body += c;
            if (c == ';') {
                body += ';';
            }
        }
        body += ';';
    }
    char head[kHeaderLen + 1];
    std::snprintf(head, sizeof head, "%-6zu", body.size());
    return std::string(head, kHeaderLen) + body;
}

bool parse_body(std::string_view body, Message& out, std::string& why)
{
    out = Message{};
    bool first = true;
    std::size_t i = 0;
    while (i < body.size()) {
        std::size_t eq = body.find('=', i);
        if (eq == std::string_view::npos) {
            why = "field '" + std::string(body.substr(i)) + "' has no '='";
            return false;
        }
        std::string key(body.substr(i, eq - i));
        if (key.empty() || key.find(';') != std::string::npos) {
            why = "empty or malformed key before offset " + std::to_string(eq);
            return false;
        }
        std::string value;
        std::size_t j = eq + 1;
        bool ended = false;
        while (j < body.size()) {
            if (body[j] == ';') {
                if (j + 1 < body.size() && body[j + 1] == ';') {
                    value += ';';
                    j += 2;
                    continue;
                }
                ended = true;
                ++j;
                break;
            }
            value += body[j++];
        }
        if (!ended) {
            why = "field '" + key + "' is not ended by ';'";
            return false;
        }
        if (first) {
            if (key != "cmd") {
                why = "the message does not begin with cmd= (it begins with " + key + "=)";
                return false;
            }
            out.cmd = std::move(value);
            first = false;
        } else {
            out.fields.emplace_back(std::move(key), std::move(value));
        }
        i = j;
    }
    if (first) {
        why = "empty message";
        return false;
    }
    return true;
}

int FrameReader::next(std::string& body, std::string& why)
{
    if (buf_.size() < kHeaderLen) {
        return 0;
    }
    std::string_view head = trim(std::string_view(buf_).substr(0, kHeaderLen));
    long len = 0;
    if (!parse_uint(head, len) || static_cast<std::size_t>(len) > kMaxBody) {
        why = "frame header '" + buf_.substr(0, kHeaderLen) + "' is not a length";
        return -1;
    }
    if (buf_.size() < kHeaderLen + static_cast<std::size_t>(len)) {
        return 0;
    }
    body = buf_.substr(kHeaderLen, static_cast<std::size_t>(len));
    buf_.erase(0, kHeaderLen + static_cast<std::size_t>(len));
    return 1;
}

bool parse_process_mapping(std::string_view text, int size, std::vector<int>& node_of_rank,
                           std::string& why)
{
    struct Block {
        long node, count, per;
    };
    std::vector<Block> blocks;
    std::string_view s = trim(text);
    auto bad = [&](const std::string& what) {
        why = "PMI_process_mapping '" + std::string(text) + "': " + what;
        return false;
    };
    if (s.size() < 2 || s.front() != '(' || s.back() != ')') {
        return bad("not in parentheses");
    }
    s = s.substr(1, s.size() - 2);
    std::size_t comma = s.find(',');
    if (trim(s.substr(0, comma)) != "vector") {
        return bad("only the 'vector' form is understood");
    }
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    while (!(s = trim(s)).empty()) {
        if (s.front() != '(') {
            return bad("a tuple does not start with '('");
        }
        std::size_t close = s.find(')');
        if (close == std::string_view::npos) {
            return bad("a tuple is not closed");
        }
        std::string_view tuple = s.substr(1, close - 1);
        long v[3];
        for (int k = 0; k < 3; ++k) {
            std::size_t c = tuple.find(',');
            if ((k < 2) == (c == std::string_view::npos)) {
                return bad("a tuple does not have three numbers");
            }
            if (!parse_uint(trim(tuple.substr(0, c)), v[k])) {
                return bad("'" + std::string(trim(tuple.substr(0, c))) + "' is not a number");
            }
            tuple = c == std::string_view::npos ? std::string_view() : tuple.substr(c + 1);
        }
        blocks.push_back(Block{v[0], v[1], v[2]});
        s = s.substr(close + 1);
        s = trim(s);
        if (!s.empty()) {
            if (s.front() != ',') {
                return bad("tuples must be separated by ','");
            }
            s.remove_prefix(1);
        }
    }
    long placed_per_round = 0;
    for (const Block& b : blocks) {
        placed_per_round += b.count * b.per;
    }
    if (size < 1 || placed_per_round == 0) {
        return bad("it places no rank");
    }
    node_of_rank.assign(static_cast<std::size_t>(size), -1);
    int rank = 0;
    while (rank < size) {
        for (const Block& b : blocks) {
            for (long n = 0; n < b.count && rank < size; ++n) {
                for (long r = 0; r < b.per && rank < size; ++r) {
                    node_of_rank[static_cast<std::size_t>(rank++)] = static_cast<int>(b.node + n);
                }
            }
        }
    }
    return true;
}

std::vector<std::string> encode_value(const void* data, std::size_t len)
{
    static constexpr char digits[] = "0123456789abcdef";
    const auto* b = static_cast<const unsigned char*>(data);
    std::string hex;
    hex.reserve(len * 2);
    for (std::size_t i = 0; i < len; ++i) {
        hex += digits[b[i] >> 4];
        hex += digits[b[i] & 15];
    }
    std::size_t count = hex.empty() ? 1 : (hex.size() + kChunkHex - 1) / kChunkHex;
    std::vector<std::string> out;
    out.reserve(count);
    for (std::size_t c = 0; c < count; ++c) {
        std::string piece = hex.substr(c * kChunkHex, kChunkHex);
        out.push_back(c == 0 ? "c" + std::to_string(count) + ":" + piece : piece);
    }
    return out;
}

bool parse_first_chunk(std::string_view chunk, std::size_t& count, std::string_view& hex)
{
    if (chunk.size() < 3 || chunk.front() != 'c') {
        return false;
    }
    std::size_t colon = chunk.find(':');
    long n = 0;
    if (colon == std::string_view::npos || !parse_uint(chunk.substr(1, colon - 1), n) || n < 1) {
        return false;
    }
    count = static_cast<std::size_t>(n);
    hex = chunk.substr(colon + 1);
    return true;
}

bool hex_decode(std::string_view hex, std::vector<std::byte>& out)
{
    if (hex.size() % 2 != 0) {
        return false;
    }
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        int hi = hex_digit(hex[i]);
        int lo = hex_digit(hex[i + 1]);
        if (hi < 0 || lo < 0) {
            return false;
        }
        out.push_back(static_cast<std::byte>(hi << 4 | lo));
    }
    return true;
}

std::string kvs_key(int rank, std::string_view key, std::size_t index)
{
    std::string k = "u" + std::to_string(rank) + "/" + std::string(key);
    if (index > 0) {
        k += "#" + std::to_string(index);
    }
    return k;
}

} // namespace ulmpi::rt::pmi2
