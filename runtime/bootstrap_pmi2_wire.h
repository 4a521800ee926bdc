// The PMI-2 wire protocol, as Slurm's `--mpi=pmi2` plugin (and MPICH's hydra)
// serve it over the socket inherited in PMI_FD. Pure text handling, no I/O,
// so that the parser is unit-tested without a launcher.
//
// Start-up is one line of the older PMI-1 syntax, answered in kind:
//   client: "cmd=init pmi_version=2 pmi_subversion=0\n"
//   server: "cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n"
// From then on every message, both ways, is a frame: six ASCII characters
// holding the decimal length of the body, left-aligned and padded with
// blanks ("34    "), then the body "cmd=NAME;key=value;key=value;". A ';'
// inside a value is written ";;". Commands used here: fullinit, job-getid,
// info-getjobattr, kvs-put, kvs-fence, kvs-get, abort, finalize; each is
// answered by "<cmd>-response" with rc=0 on success (abort is not answered).
//
// Values are text of at most 1024 characters and Slurm does not take ";;"
// apart, so binary values travel as hex in chunks (encode_value /
// chunk_count below); keys are at most 64 characters.
//
// PMI_process_mapping describes where the ranks run:
//   "(vector,(N0,C0,R0),(N1,C1,R1),...)"
// Each tuple puts R consecutive ranks on each of the C nodes N, N+1, ...;
// when the tuples are used up before every rank is placed, they are applied
// again from the start (a cyclic distribution is "(vector,(0,2,1))").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ulmpi::rt::pmi2 {

inline constexpr std::size_t kHeaderLen = 6;
inline constexpr std::size_t kMaxBody = 999999; // what six digits can say
inline constexpr std::size_t kMaxKey = 64;
inline constexpr std::size_t kMaxValue = 1024;
// Hex characters of one value chunk: a chunk header "cN:" and the hex stay
// below kMaxValue.
inline constexpr std::size_t kChunkHex = 1000;

struct Message {
    std::string cmd;
    std::vector<std::pair<std::string, std::string>> fields; // in wire order, cmd excluded

    // The value of `key`, or nullptr.
    const std::string* find(std::string_view key) const;
    // rc as an integer: 0 when absent (old servers omit it), -1 when not a number.
    int rc() const;
};

// The PMI-1 line that starts the conversation, and the check of its answer.
std::string init_line();
// Parses "cmd=response_to_init ...". False with `why` when the line is not
// that answer, rc is not 0, or the server does not speak version 2.0.
bool check_init_response(std::string_view line, std::string& why);

// A whole frame: header and body. Keys must not contain '=' or ';'; a ';' in
// a value is doubled.
std::string encode(std::string_view cmd,
                   const std::vector<std::pair<std::string, std::string>>& fields);
// Parses a frame body (without its 6-character header).
bool parse_body(std::string_view body, Message& out, std::string& why);

// Accumulates bytes from the socket and cuts them into frame bodies.
class FrameReader {
public:
    void append(const char* data, std::size_t n) { buf_.append(data, n); }
    // 1: `body` holds the next frame's body; 0: incomplete; -1: the header is
    // not a length (why says what it is).
    int next(std::string& body, std::string& why);
    bool empty() const { return buf_.empty(); }

private:
    std::string buf_;
};

// "(vector,(0,2,2))" -> node index of every rank. False with `why` when the
// text is malformed or places no rank.
bool parse_process_mapping(std::string_view text, int size, std::vector<int>& node_of_rank,
                           std::string& why);

// Binary values: lowercase hex, split into chunks. Chunk 0 carries the
// count: "c<N>:<hex>", the others are plain hex.
std::vector<std::string> encode_value(const void* data, std::size_t len);
// Parses chunk 0: the count of chunks and the hex it carries.
bool parse_first_chunk(std::string_view chunk, std::size_t& count, std::string_view& hex);
bool hex_decode(std::string_view hex, std::vector<std::byte>& out);
// The KVS key under which `rank` keeps chunk `index` of its value `key`
// (Slurm's KVS is one flat space for the whole job step).
std::string kvs_key(int rank, std::string_view key, std::size_t index);

} // namespace ulmpi::rt::pmi2
