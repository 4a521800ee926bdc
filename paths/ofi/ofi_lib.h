// libfabric, loaded with dlopen when the ofi path is first asked for, not
// linked into libmpi: libfabric.so pulls in libpsm2 and libinfinipath,
// whose constructors install handlers for SIGSEGV, SIGBUS, SIGILL and more
// that print a backtrace and exit(1). Linked, they ran in every process and
// turned a rank killed by a signal into one that exited with status 1 (the
// launcher then names the wrong cause). load() saves every signal's
// disposition before the dlopen and puts it back after, so a program's own
// handlers, or the default ones, stay.
//
// Only the functions libfabric exports are reached through here; everything
// else in its headers (fi_domain, fi_send, fi_cq_read, ...) is an inline
// call through the provider's operation tables.
#pragma once

#include <rdma/fabric.h>

#include <cstdint>
#include <string>

namespace ulmpi::path::ofi::lib {

// Loads libfabric once; false (with the reason) when it is not there.
bool load(std::string& why);

int getinfo(std::uint32_t version, const char* node, const char* service, std::uint64_t flags,
            const fi_info* hints, fi_info** info);
void freeinfo(fi_info* info);
fi_info* dupinfo(const fi_info* info); // nullptr: a fresh, empty fi_info
int fabric(fi_fabric_attr* attr, fid_fabric** fabric, void* context);
const char* strerror(int errnum);
std::uint32_t version();

} // namespace ulmpi::path::ofi::lib
