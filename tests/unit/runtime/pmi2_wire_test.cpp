// The PMI-2 wire protocol (runtime/bootstrap_pmi2_wire.h): frames, the init
// line, process mappings and value chunks, without a launcher.
#include "runtime/bootstrap_env.h"
#include "runtime/bootstrap_pmi2_wire.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace ulmpi::rt;

namespace {

std::vector<int> mapping(const char* text, int size)
{
    std::vector<int> nodes;
    std::string why;
    EXPECT_TRUE(pmi2::parse_process_mapping(text, size, nodes, why)) << why;
    return nodes;
}

} // namespace

TEST(Pmi2Wire, encode_writes_a_six_character_length_then_the_body)
{
    std::string f = pmi2::encode("kvs-put", {{"key", "u0/udp.addr"}, {"value", "c1:00ff"}});
    const std::string body = "cmd=kvs-put;key=u0/udp.addr;value=c1:00ff;";
    ASSERT_EQ(f.size(), 6 + body.size());
    EXPECT_EQ(f.substr(0, 6), std::to_string(body.size()) + std::string(6 - std::to_string(body.size()).size(), ' '));
    EXPECT_EQ(f.substr(6), body);
    EXPECT_EQ(pmi2::encode("finalize", {}), "13    cmd=finalize;");
}

TEST(Pmi2Wire, parse_reads_fields_in_order_and_undoubles_semicolons)
{
    pmi2::Message m;
    std::string why;
    ASSERT_TRUE(pmi2::parse_body("cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;"
                                 "rank=3;size=8;appnum=-1;debugged=FALSE;pmiverbose=FALSE;",
                                 m, why))
        << why;
    EXPECT_EQ(m.cmd, "fullinit-response");
    ASSERT_EQ(m.fields.size(), 8u);
    EXPECT_EQ(m.fields[2].first, "pmi-subversion");
    ASSERT_NE(m.find("rank"), nullptr);
    EXPECT_EQ(*m.find("rank"), "3");
    EXPECT_EQ(*m.find("appnum"), "-1");
    EXPECT_EQ(m.find("missing"), nullptr);
    EXPECT_EQ(m.rc(), 0);

    ASSERT_TRUE(pmi2::parse_body("cmd=kvs-get-response;rc=0;found=TRUE;value=a;;b=c;;;", m, why));
    EXPECT_EQ(*m.find("value"), "a;b=c;");
    // A value may hold '=' and be empty.
    ASSERT_TRUE(pmi2::parse_body("cmd=x;k=;j==;", m, why));
    EXPECT_EQ(*m.find("k"), "");
    EXPECT_EQ(*m.find("j"), "=");
}

TEST(Pmi2Wire, encode_and_parse_round_trip_a_semicolon_in_a_value)
{
    std::string f = pmi2::encode("abort", {{"isworld", "TRUE"}, {"msg", "a;b"}});
    pmi2::FrameReader r;
    r.append(f.data(), f.size());
    std::string body, why;
    ASSERT_EQ(r.next(body, why), 1);
    pmi2::Message m;
    ASSERT_TRUE(pmi2::parse_body(body, m, why)) << why;
    EXPECT_EQ(*m.find("msg"), "a;b");
}

TEST(Pmi2Wire, parse_refuses_malformed_bodies)
{
    pmi2::Message m;
    std::string why;
    EXPECT_FALSE(pmi2::parse_body("", m, why));
    EXPECT_FALSE(pmi2::parse_body("rc=0;cmd=x;", m, why)); // cmd must come first
    EXPECT_NE(why.find("cmd="), std::string::npos);
    EXPECT_FALSE(pmi2::parse_body("cmd=x;rc=0", m, why)); // not ended by ';'
    EXPECT_FALSE(pmi2::parse_body("cmd=x;novalue;", m, why));
    EXPECT_FALSE(pmi2::parse_body("cmd=x;=v;", m, why));
}

TEST(Pmi2Wire, rc_is_minus_one_when_not_a_number)
{
    pmi2::Message m;
    std::string why;
    ASSERT_TRUE(pmi2::parse_body("cmd=x;rc=14;", m, why));
    EXPECT_EQ(m.rc(), 14);
    ASSERT_TRUE(pmi2::parse_body("cmd=x;rc=-3;", m, why));
    EXPECT_EQ(m.rc(), -3);
    ASSERT_TRUE(pmi2::parse_body("cmd=x;rc=oops;", m, why));
    EXPECT_EQ(m.rc(), -1);
}

TEST(Pmi2Wire, reader_cuts_frames_that_arrive_in_pieces_and_together)
{
    std::string a = pmi2::encode("kvs-put-response", {{"rc", "0"}});
    std::string b = pmi2::encode("kvs-fence-response", {{"rc", "0"}});
    std::string all = a + b;
    pmi2::FrameReader r;
    std::string body, why;
    r.append(all.data(), 3); // part of the header
    EXPECT_EQ(r.next(body, why), 0);
    r.append(all.data() + 3, 10); // header and part of the body
    EXPECT_EQ(r.next(body, why), 0);
    r.append(all.data() + 13, all.size() - 13);
    ASSERT_EQ(r.next(body, why), 1);
    EXPECT_EQ(body, "cmd=kvs-put-response;rc=0;");
    ASSERT_EQ(r.next(body, why), 1);
    EXPECT_EQ(body, "cmd=kvs-fence-response;rc=0;");
    EXPECT_EQ(r.next(body, why), 0);
    EXPECT_TRUE(r.empty());
}

TEST(Pmi2Wire, reader_refuses_a_header_that_is_not_a_length)
{
    pmi2::FrameReader r;
    std::string body, why;
    r.append("cmd=fullinit;", 13); // a PMI-1 line where a frame belongs
    EXPECT_EQ(r.next(body, why), -1);
    EXPECT_NE(why.find("not a length"), std::string::npos);
}

TEST(Pmi2Wire, init_answer_must_be_version_2_0_with_rc_0)
{
    std::string why;
    EXPECT_EQ(pmi2::init_line(), "cmd=init pmi_version=2 pmi_subversion=0\n");
    EXPECT_TRUE(pmi2::check_init_response(
        "cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n", why))
        << why;
    EXPECT_TRUE(pmi2::check_init_response(
        "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0", why))
        << why;
    EXPECT_FALSE(pmi2::check_init_response(
        "cmd=response_to_init rc=1 pmi_version=1 pmi_subversion=1\n", why));
    EXPECT_NE(why.find("rc=1"), std::string::npos);
    EXPECT_FALSE(pmi2::check_init_response(
        "cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1\n", why));
    EXPECT_NE(why.find("1.1"), std::string::npos);
    EXPECT_FALSE(pmi2::check_init_response("cmd=barrier_out\n", why));
    EXPECT_FALSE(pmi2::check_init_response("garbage", why));
}

TEST(Pmi2Wire, block_mapping_puts_consecutive_ranks_on_each_node)
{
    EXPECT_EQ(mapping("(vector,(0,2,2))", 4), (std::vector<int>{0, 0, 1, 1}));
    EXPECT_EQ(mapping("(vector,(0,1,3))", 3), (std::vector<int>{0, 0, 0}));
    // Slurm writes blanks after the commas on some versions.
    EXPECT_EQ(mapping("(vector, (0,2,2))", 4), (std::vector<int>{0, 0, 1, 1}));
    // Uneven: 3 ranks on node 0, 2 on node 1.
    EXPECT_EQ(mapping("(vector,(0,1,3),(1,1,2))", 5), (std::vector<int>{0, 0, 0, 1, 1}));
}

TEST(Pmi2Wire, cyclic_mapping_repeats_the_vector_until_every_rank_is_placed)
{
    EXPECT_EQ(mapping("(vector,(0,2,1))", 5), (std::vector<int>{0, 1, 0, 1, 0}));
    EXPECT_EQ(mapping("(vector,(0,3,1))", 4), (std::vector<int>{0, 1, 2, 0}));
}

TEST(Pmi2Wire, malformed_mappings_are_refused_with_the_text)
{
    std::vector<int> nodes;
    std::string why;
    EXPECT_FALSE(pmi2::parse_process_mapping("", 2, nodes, why));
    EXPECT_FALSE(pmi2::parse_process_mapping("(vector)", 2, nodes, why));
    EXPECT_NE(why.find("places no rank"), std::string::npos);
    EXPECT_FALSE(pmi2::parse_process_mapping("(list,(0,1,2))", 2, nodes, why));
    EXPECT_FALSE(pmi2::parse_process_mapping("(vector,(0,1))", 2, nodes, why));
    EXPECT_FALSE(pmi2::parse_process_mapping("(vector,(0,1,x))", 2, nodes, why));
    EXPECT_FALSE(pmi2::parse_process_mapping("(vector,(0,1,2)", 2, nodes, why));
    EXPECT_FALSE(pmi2::parse_process_mapping("(vector,(0,0,2))", 2, nodes, why));
    EXPECT_NE(why.find("(vector,(0,0,2))"), std::string::npos);
}

TEST(Pmi2Wire, values_travel_as_hex_chunks_that_fit_the_value_limit)
{
    std::vector<unsigned char> data(1234);
    for (std::size_t i = 0; i < data.size(); ++i) {
        data[i] = static_cast<unsigned char>(i * 7 + 3);
    }
    std::vector<std::string> chunks = pmi2::encode_value(data.data(), data.size());
    ASSERT_EQ(chunks.size(), 3u); // 2468 hex characters, 1000 a chunk
    for (const std::string& c : chunks) {
        EXPECT_LE(c.size(), pmi2::kMaxValue);
        EXPECT_EQ(c.find(';'), std::string::npos);
    }
    std::size_t count = 0;
    std::string_view hex;
    ASSERT_TRUE(pmi2::parse_first_chunk(chunks[0], count, hex));
    EXPECT_EQ(count, 3u);
    std::vector<std::byte> back;
    ASSERT_TRUE(pmi2::hex_decode(hex, back));
    ASSERT_TRUE(pmi2::hex_decode(chunks[1], back));
    ASSERT_TRUE(pmi2::hex_decode(chunks[2], back));
    ASSERT_EQ(back.size(), data.size());
    for (std::size_t i = 0; i < data.size(); ++i) {
        ASSERT_EQ(static_cast<unsigned char>(back[i]), data[i]) << i;
    }
}

TEST(Pmi2Wire, an_empty_value_is_one_chunk)
{
    std::vector<std::string> chunks = pmi2::encode_value(nullptr, 0);
    ASSERT_EQ(chunks.size(), 1u);
    EXPECT_EQ(chunks[0], "c1:");
    std::size_t count = 0;
    std::string_view hex;
    // "c1:" is the shortest first chunk.
    ASSERT_TRUE(pmi2::parse_first_chunk(chunks[0], count, hex));
    EXPECT_EQ(count, 1u);
    EXPECT_TRUE(hex.empty());
}

TEST(Pmi2Wire, foreign_values_are_refused)
{
    std::size_t count = 0;
    std::string_view hex;
    std::vector<std::byte> out;
    EXPECT_FALSE(pmi2::parse_first_chunk("hello", count, hex));
    EXPECT_FALSE(pmi2::parse_first_chunk("c0:00", count, hex));
    EXPECT_FALSE(pmi2::parse_first_chunk("cx:00", count, hex));
    EXPECT_FALSE(pmi2::hex_decode("abc", out));
    EXPECT_FALSE(pmi2::hex_decode("zz", out));
}

TEST(Pmi2Wire, keys_name_the_rank_and_the_chunk)
{
    EXPECT_EQ(pmi2::kvs_key(12, "udp.addr", 0), "u12/udp.addr");
    EXPECT_EQ(pmi2::kvs_key(12, "udp.addr", 2), "u12/udp.addr#2");
    EXPECT_NE(pmi2::kvs_key(1, "k", 0), pmi2::kvs_key(11, "k", 0));
}

TEST(BootEnv, locality_follows_the_node_of_every_rank)
{
    JobInfo job;
    job.size = 5;
    job.rank = 3;
    job.node_of_rank = {0, 1, 0, 1, 1};
    std::string why;
    ASSERT_TRUE(bootenv::fill_locality(job, why)) << why;
    EXPECT_EQ(job.node_id, 1);
    EXPECT_EQ(job.num_nodes, 2);
    EXPECT_EQ(job.local_rank, 1); // ranks 1, 3, 4 share node 1
    EXPECT_EQ(job.local_size, 3);

    job.node_of_rank = {0, 1};
    EXPECT_FALSE(bootenv::fill_locality(job, why));
    job.node_of_rank = {0, -1, 0, 0, 0};
    EXPECT_FALSE(bootenv::fill_locality(job, why));
}

TEST(BootEnv, job_ids_are_safe_file_names)
{
    EXPECT_EQ(bootenv::safe_jobid("pmix-", "slurm.pmix.12.0"), "pmix-slurm.pmix.12.0");
    EXPECT_EQ(bootenv::safe_jobid("pmi2-", "a/b c:d"), "pmi2-a_b_c_d");
}

TEST(BootEnv, env_int_names_the_variable_when_it_is_not_a_number)
{
    int v = 0;
    std::string why;
    ::setenv("ULMPI_TEST_PMI_INT", "17", 1);
    EXPECT_TRUE(bootenv::env_int("ULMPI_TEST_PMI_INT", v, why));
    EXPECT_EQ(v, 17);
    ::setenv("ULMPI_TEST_PMI_INT", "17x", 1);
    EXPECT_FALSE(bootenv::env_int("ULMPI_TEST_PMI_INT", v, why));
    EXPECT_NE(why.find("ULMPI_TEST_PMI_INT='17x'"), std::string::npos);
    ::unsetenv("ULMPI_TEST_PMI_INT");
    EXPECT_FALSE(bootenv::env_int("ULMPI_TEST_PMI_INT", v, why));
    EXPECT_TRUE(why.empty());
}
