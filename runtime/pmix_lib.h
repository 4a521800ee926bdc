// libpmix, loaded with dlopen when a PMIx launcher started the program
// (PMIX_NAMESPACE is set), not linked into libmpi: libpmix.so.2 brings
// libevent, libhwloc, libmunge and libudev with it, and loading those in
// every rank of every job cost each process about 0.5 ms of dynamic linking
// (docs/scaling.md) and mpirun too. Only the headers are used at build time.
//
// The PMIx macros that free values (PMIX_VALUE_RELEASE, PMIX_INFO_DESTRUCT)
// call PMIx_Value_destruct; use value_release() and info_destruct() below.
#pragma once

#include <pmix.h>

#include <cstddef>
#include <string>

namespace ulmpi::rt::pmix_lib {

// The functions of libpmix the PMIx bootstrap calls, typed from pmix.h.
struct Api {
    decltype(&::PMIx_Init) init;
    decltype(&::PMIx_Finalize) finalize;
    decltype(&::PMIx_Abort) abort;
    decltype(&::PMIx_Put) put;
    decltype(&::PMIx_Commit) commit;
    decltype(&::PMIx_Fence) fence;
    decltype(&::PMIx_Fence_nb) fence_nb;
    decltype(&::PMIx_Get) get;
    decltype(&::PMIx_Resolve_nodes) resolve_nodes;
    decltype(&::PMIx_Resolve_peers) resolve_peers;
    decltype(&::PMIx_Register_event_handler) register_event_handler;
    decltype(&::PMIx_Deregister_event_handler) deregister_event_handler;
    decltype(&::PMIx_Error_string) error_string;
    decltype(&::PMIx_Info_load) info_load;
    decltype(&::PMIx_Value_destruct) value_destruct;
    decltype(&::PMIx_Publish) publish;
    decltype(&::PMIx_Lookup) lookup;
    decltype(&::PMIx_Unpublish) unpublish;
};

// Loads libpmix once (thread-safe); false with the reason when it cannot.
bool load(std::string& why);
// The functions; only after load() answered true.
const Api& api();

// PMIX_VALUE_RELEASE: destructs and frees a value PMIx_Get returned.
void value_release(pmix_value_t*& v);
// PMIX_INFO_DESTRUCT of an info that PMIx_Info_load filled.
void info_destruct(pmix_info_t* info);

} // namespace ulmpi::rt::pmix_lib
