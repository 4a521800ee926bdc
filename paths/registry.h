// Path registry. Each path folder registers a factory with one line:
//     static const path::Registrar reg{"shm", 20, &make_shm_paths};
// (meson builds optional paths or not; no #ifdef). make_paths() builds the
// paths chosen by the ULMPI_PATH_INCLUDE parameter, highest priority first.
//
// A factory returns one path per rail: a path kind with two network
// interfaces (or two HCA ports) gives two paths, each with its own name
// (udp0, udp1), which ULM's per-peer link stripes over and fails over
// between. An empty list: the kind is not usable for this job (e.g. shm
// with one rank on the host).
#pragma once

#include "paths/path.h"

#include <memory>
#include <string>
#include <vector>

namespace ulmpi::path {

using Factory = std::vector<std::unique_ptr<Path>> (*)(const rt::JobInfo& job);

struct Registrar {
    Registrar(const char* name, int priority, Factory factory);
};

struct RegisteredPath {
    const char* name;
    int priority; // higher first: self > shm > verbs > ofi > udp
    Factory factory;
};

std::vector<RegisteredPath> registered_paths();

// Whether ULMPI_PATH_INCLUDE names the path kind `name` and
// ULMPI_PATH_EXCLUDE does not (a path that reaches this host's ranks only
// when shm is not chosen asks about "shm").
bool path_selected(const char* name);

// Creates the selected paths, highest priority first. `why` explains an
// unknown name in the include list.
std::vector<std::unique_ptr<Path>> make_paths(const rt::JobInfo& job, std::string& why);

// Decorators (such as lossy) wrap a path after creation.
using Decorator = std::unique_ptr<Path> (*)(std::unique_ptr<Path> inner, const rt::JobInfo& job);
struct DecoratorRegistrar {
    DecoratorRegistrar(const char* name, Decorator decorate);
};

} // namespace ulmpi::path
