// Chooses the bootstrap implementation from the environment.
#include "runtime/boot_wire.h"
#include "runtime/bootstrap.h"

#include <cstdlib>

namespace ulmpi::rt {

// Defined next to each implementation (bootstrap_ours.cpp, bootstrap_pmix.cpp
// or bootstrap_pmix_none.cpp, bootstrap_pmi2.cpp, bootstrap_singleton.cpp).
std::unique_ptr<Bootstrap> make_our_bootstrap(std::string& why);
std::unique_ptr<Bootstrap> make_pmix_bootstrap(std::string& why);
std::unique_ptr<Bootstrap> make_pmi2_bootstrap(std::string& why);
std::unique_ptr<Bootstrap> make_singleton_bootstrap(std::string& why);

namespace {

const char* set_var(const char* name)
{
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
}

} // namespace

BootChoice choose_bootstrap()
{
    struct Rule {
        const char* var;
        BootKind kind;
    };
    static constexpr Rule rules[] = {{wire::env::boot_addr, BootKind::ours},
                                     {"PMIX_NAMESPACE", BootKind::pmix},
                                     {"PMI_FD", BootKind::pmi2},
                                     {"PMI_RANK", BootKind::pmi2}};
    for (const Rule& r : rules) {
        if (const char* v = set_var(r.var)) {
            return BootChoice{r.kind, std::string(r.var) + "=" + v + " is set"};
        }
    }
    return BootChoice{BootKind::singleton,
                      std::string("none of ") + wire::env::boot_addr +
                          ", PMIX_NAMESPACE, PMI_FD, PMI_RANK is set"};
}

const char* boot_kind_name(BootKind kind)
{
    switch (kind) {
    case BootKind::ours: return "ulmpi";
    case BootKind::pmix: return "pmix";
    case BootKind::pmi2: return "pmi2";
    case BootKind::singleton: return "singleton";
    }
    return "?";
}

std::unique_ptr<Bootstrap> make_bootstrap(std::string& why)
{
    BootChoice c = choose_bootstrap();
    std::unique_ptr<Bootstrap> b;
    switch (c.kind) {
    case BootKind::ours: b = make_our_bootstrap(why); break;
    case BootKind::pmix: b = make_pmix_bootstrap(why); break;
    case BootKind::pmi2: b = make_pmi2_bootstrap(why); break;
    case BootKind::singleton: b = make_singleton_bootstrap(why); break;
    }
    if (!b && c.kind != BootKind::ours) {
        why = std::string(boot_kind_name(c.kind)) + " bootstrap (" + c.reason + "): " + why;
    }
    return b;
}

} // namespace ulmpi::rt
