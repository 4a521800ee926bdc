// Network helpers of the multi-host launch: which names are this machine,
// which local address the daemons of other hosts connect to, and the
// keepalive settings of the mpirun <-> daemon connections.
//
// No name service is asked: a host is this machine when its name is
// "localhost", a loopback address, gethostname() (with or without domain),
// an IPv4 address of a local interface, or a name that /etc/hosts maps to
// one. (`ip netns exec NS` shows /etc/netns/NS/hosts as /etc/hosts, which is
// how scripts/netns-cluster makes "h0" the head node inside namespace h0.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ulmpi::rt::mpirun::net {

struct Interface {
    std::string name;
    std::uint32_t addr = 0; // IPv4, host byte order
    std::uint32_t mask = 0;
    bool up = false;
    bool loopback = false;
};

// The IPv4 addresses of this machine (of this network namespace).
std::vector<Interface> interfaces();

std::string ip_text(std::uint32_t addr);
bool parse_ipv4(const std::string& text, std::uint32_t& out);

// IPv4 addresses /etc/hosts gives `name` (no DNS).
std::vector<std::uint32_t> hosts_file_addresses(const std::string& name,
                                                const std::string& path = "/etc/hosts");

// True when `name` designates the machine (network namespace) mpirun runs on.
bool is_this_machine(const std::string& name, const std::string& hostname);

// The address mpirun listens on for daemons. `spec` (--boot-if /
// ULMPI_BOOT_IF) is an interface name, an IPv4 address of this machine or a
// subnet a.b.c.d/n; empty: the local interface on the same subnet as the
// first remote host that /etc/hosts (or the name itself) gives an address,
// else the first non-loopback interface that is up, else loopback.
bool choose_boot_ip(const std::string& spec, const std::vector<std::string>& remote_hosts,
                    std::string& ip, std::string& why);

// TCP keepalive and user timeout from ULMPI_BOOT_KEEPALIVE: a connection
// whose peer vanished (host down, link cut) fails within about that time.
void set_keepalive(int fd);

} // namespace ulmpi::rt::mpirun::net
