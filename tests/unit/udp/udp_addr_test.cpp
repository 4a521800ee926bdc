// Address logic of the udp path on plain data: subnets, which interfaces a
// rank binds, the published record, interface pairs, datagram room.
#include "paths/udp/udp_addr.h"

#include <gtest/gtest.h>

#include <cstring>

namespace ulmpi::path::udp {
namespace {

std::uint32_t ip(const char* text)
{
    std::uint32_t v = 0;
    EXPECT_TRUE(parse_ipv4(text, v)) << text;
    return v;
}

TEST(UdpCidr, parses_subnets_and_bare_addresses)
{
    Cidr c;
    std::string why;
    ASSERT_TRUE(parse_cidr("10.0.0.0/24", c, why)) << why;
    EXPECT_TRUE(c.contains(ip("10.0.0.7")));
    EXPECT_FALSE(c.contains(ip("10.0.1.7")));
    ASSERT_TRUE(parse_cidr("10.0.0.77/24", c, why)); // host bits are ignored
    EXPECT_EQ(c.net, ip("10.0.0.0"));
    ASSERT_TRUE(parse_cidr("192.0.2.2", c, why));
    EXPECT_TRUE(c.contains(ip("192.0.2.2")));
    EXPECT_FALSE(c.contains(ip("192.0.2.3")));
    ASSERT_TRUE(parse_cidr("0.0.0.0/0", c, why));
    EXPECT_TRUE(c.contains(ip("203.0.113.9")));
}

TEST(UdpCidr, refuses_malformed_subnets_with_a_reason)
{
    Cidr c;
    for (const char* bad : {"10.0.0/24", "10.0.0.0/33", "10.0.0.0/", "x", "", "10.0.0.0/2a",
                            "10.0.0.0/-1", "::1/128"}) {
        std::string why;
        EXPECT_FALSE(parse_cidr(bad, c, why)) << bad;
        EXPECT_FALSE(why.empty()) << bad;
    }
    EXPECT_EQ(ip_text(ip("10.1.2.3")), "10.1.2.3");
}

std::vector<Iface> host()
{
    std::vector<Iface> v(4);
    v[0] = {"lo", ip("127.0.0.1"), ip("255.0.0.0"), 65536, true, true};
    v[1] = {"eth0", ip("192.0.2.2"), ip("255.255.255.0"), 1500, true, false};
    v[2] = {"eth1", ip("10.0.0.1"), ip("255.255.255.0"), 9000, false, false};
    v[3] = {"eth2", ip("10.1.0.1"), ip("255.255.0.0"), 1500, true, false};
    return v;
}

std::vector<std::string> names(const std::vector<Iface>& v)
{
    std::vector<std::string> out;
    for (const Iface& f : v) {
        out.push_back(f.name);
    }
    return out;
}

TEST(UdpSelect, default_is_the_first_interface_up_or_loopback_on_one_host)
{
    std::vector<Iface> out;
    std::string why;
    ASSERT_TRUE(select_ifaces(host(), "", "", false, out, why)) << why;
    EXPECT_EQ(names(out), std::vector<std::string>{"eth0"});
    ASSERT_TRUE(select_ifaces(host(), "", "", true, out, why)) << why;
    EXPECT_EQ(names(out), std::vector<std::string>{"lo"});
    auto only_lo = host();
    only_lo[1].up = false;
    only_lo[3].up = false;
    ASSERT_TRUE(select_ifaces(only_lo, "", "", false, out, why)) << why;
    EXPECT_EQ(names(out), std::vector<std::string>{"lo"});
    for (Iface& f : only_lo) {
        f.up = false;
    }
    EXPECT_FALSE(select_ifaces(only_lo, "", "", false, out, why));
    EXPECT_NE(why.find("up"), std::string::npos) << why;
}

TEST(UdpSelect, names_give_exactly_those_interfaces_in_order)
{
    std::vector<Iface> out;
    std::string why;
    ASSERT_TRUE(select_ifaces(host(), "eth2, eth0", "", false, out, why)) << why;
    EXPECT_EQ(names(out), (std::vector<std::string>{"eth2", "eth0"}));
    ASSERT_TRUE(select_ifaces(host(), "eth0,eth0", "", false, out, why)) << why;
    EXPECT_EQ(names(out), std::vector<std::string>{"eth0"});
    EXPECT_FALSE(select_ifaces(host(), "eth0,wlan9", "", false, out, why));
    EXPECT_NE(why.find("wlan9"), std::string::npos) << why;
    EXPECT_NE(why.find("ULMPI_UDP_IF"), std::string::npos) << why;
    EXPECT_FALSE(select_ifaces(host(), "eth1", "", false, out, why));
    EXPECT_NE(why.find("down"), std::string::npos) << why;
}

TEST(UdpSelect, subnets_give_every_interface_up_inside_them)
{
    std::vector<Iface> out;
    std::string why;
    ASSERT_TRUE(select_ifaces(host(), "", "10.0.0.0/8", false, out, why)) << why;
    EXPECT_EQ(names(out), std::vector<std::string>{"eth2"}); // eth1 is down
    ASSERT_TRUE(select_ifaces(host(), "", "10.1.0.0/16,192.0.2.0/24", false, out, why)) << why;
    EXPECT_EQ(names(out), (std::vector<std::string>{"eth0", "eth2"}));
    ASSERT_TRUE(select_ifaces(host(), "eth0,eth2", "10.0.0.0/8", false, out, why)) << why;
    EXPECT_EQ(names(out), std::vector<std::string>{"eth2"});
    EXPECT_FALSE(select_ifaces(host(), "", "172.16.0.0/12", false, out, why));
    EXPECT_NE(why.find("172.16.0.0/12"), std::string::npos) << why;
    EXPECT_FALSE(select_ifaces(host(), "eth0", "10.0.0.0/8", false, out, why));
    EXPECT_FALSE(select_ifaces(host(), "", "10.0.0.0/99", false, out, why));
    EXPECT_NE(why.find("ULMPI_UDP_SUBNET"), std::string::npos) << why;
}

TEST(UdpRecord, round_trips_and_refuses_damage)
{
    std::vector<Endpoint> eps(2);
    eps[0] = {ip("10.0.0.1"), ip("255.255.255.0"), {40000, 40001}, 1500};
    eps[1] = {ip("10.0.1.1"), ip("255.255.255.0"), {50000, 65535}, 9000};
    std::vector<std::byte> rec = encode_endpoints(eps);
    std::vector<Endpoint> back;
    ASSERT_TRUE(decode_endpoints(rec.data(), rec.size(), back));
    ASSERT_EQ(back.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(back[i].ip, eps[i].ip);
        EXPECT_EQ(back[i].mask, eps[i].mask);
        EXPECT_EQ(back[i].port[0], eps[i].port[0]);
        EXPECT_EQ(back[i].port[1], eps[i].port[1]);
        EXPECT_EQ(back[i].mtu, eps[i].mtu);
    }
    EXPECT_FALSE(decode_endpoints(rec.data(), rec.size() - 1, back));
    EXPECT_TRUE(back.empty());
    EXPECT_FALSE(decode_endpoints(rec.data(), 7, back));
    auto bad = rec;
    bad[0] ^= std::byte{1};
    EXPECT_FALSE(decode_endpoints(bad.data(), bad.size(), back));
    bad = rec;
    bad[4] = std::byte{2}; // version
    EXPECT_FALSE(decode_endpoints(bad.data(), bad.size(), back));
    eps[1].port[1] = 0;
    rec = encode_endpoints(eps);
    EXPECT_FALSE(decode_endpoints(rec.data(), rec.size(), back));
    rec = encode_endpoints({});
    EXPECT_FALSE(decode_endpoints(rec.data(), rec.size(), back));
}

Endpoint ep(const char* a, const char* mask) { return Endpoint{ip(a), ip(mask), {1, 2}, 1500}; }

TEST(UdpPairs, pair_interfaces_on_shared_subnets)
{
    std::vector<Endpoint> mine = {ep("10.0.0.1", "255.255.255.0"), ep("10.0.1.1", "255.255.255.0")};
    std::vector<Endpoint> theirs = {ep("10.0.1.2", "255.255.255.0"),
                                    ep("10.0.0.2", "255.255.255.0")};
    auto p = make_pairs(mine, theirs);
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[0].local, 0);
    EXPECT_EQ(p[0].remote, 1);
    EXPECT_EQ(p[1].local, 1);
    EXPECT_EQ(p[1].remote, 0);
}

TEST(UdpPairs, two_nics_on_one_subnet_feed_two_peer_nics)
{
    std::vector<Endpoint> mine = {ep("10.0.0.1", "255.255.255.0"),
                                  ep("10.0.0.11", "255.255.255.0")};
    std::vector<Endpoint> theirs = {ep("10.0.0.2", "255.255.255.0"),
                                    ep("10.0.0.12", "255.255.255.0")};
    auto p = make_pairs(mine, theirs);
    ASSERT_EQ(p.size(), 2u);
    EXPECT_NE(p[0].remote, p[1].remote);
    // The peer has one NIC there: my second one would only share its link.
    p = make_pairs(mine, {ep("10.0.0.2", "255.255.255.0")});
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].local, 0);
}

TEST(UdpPairs, no_shared_subnet_pairs_the_first_interfaces_for_routing)
{
    auto p = make_pairs({ep("10.0.0.1", "255.255.255.0")}, {ep("10.9.0.1", "255.255.255.0")});
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].local, 0);
    EXPECT_EQ(p[0].remote, 0);
    EXPECT_TRUE(make_pairs({}, {ep("10.9.0.1", "255.255.255.0")}).empty());
}

TEST(UdpRoom, largest_datagram_without_ip_fragmentation)
{
    EXPECT_EQ(udp_room(1500), 1472u);
    EXPECT_EQ(udp_room(9000), 8972u);
    EXPECT_EQ(udp_room(65536), 65507u);
    EXPECT_EQ(udp_room(20), 0u);
}

TEST(UdpIfaces, this_host_lists_its_loopback)
{
    std::vector<Iface> all;
    std::string why;
    ASSERT_TRUE(list_ifaces(all, why)) << why;
    bool lo = false;
    for (const Iface& f : all) {
        lo = lo || (f.loopback && f.ip == ip("127.0.0.1") && f.mtu > 0);
    }
    if (!lo) {
        GTEST_SKIP() << "no loopback interface with 127.0.0.1 here";
    }
}

} // namespace
} // namespace ulmpi::path::udp
