// Info objects (MPI-3.1 chapter 9): ordered (key, value) string pairs.
// Keys keep the order they were first set in (MPI_Info_get_nthkey counts
// in that order); setting a key again replaces its value in place.
// MPI_INFO_ENV (predefined, never freed) describes how the job started:
// command, argv, maxprocs, host, wdir, thread_level, mpi_initial_errhandler.
#pragma once

#include "mpi/entry.h"

#include <string>
#include <utility>
#include <vector>

namespace ulmpi::mpi {

using InfoPairs = std::vector<std::pair<std::string, std::string>>;

struct Info {
    int handle = 0;
    bool predefined = false;
    InfoPairs pairs;
};

Info* info_get(MPI_Info h); // nullptr for invalid handles and MPI_INFO_NULL
// A new info object holding `pairs`; MPI_INFO_NULL when the table is full.
MPI_Info info_new(const InfoPairs& pairs);
void info_pairs_set(InfoPairs& pairs, const std::string& key, const std::string& value);
const std::string* info_pairs_find(const InfoPairs& pairs, const std::string& key);

} // namespace ulmpi::mpi
