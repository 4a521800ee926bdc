#include "runtime/config.h"

#include "runtime/log.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

extern char** environ;

namespace ulmpi::rt {
namespace {

std::vector<ParamBase*>& registry()
{
    static std::vector<ParamBase*> params;
    return params;
}

std::string lower(std::string_view s)
{
    std::string out(s);
    for (char& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

bool in_choices(const char* choices, std::string_view v)
{
    if (choices == nullptr) {
        return true;
    }
    std::string_view all(choices);
    size_t pos = 0;
    while (pos <= all.size()) {
        size_t bar = all.find('|', pos);
        std::string_view one = all.substr(pos, bar == std::string_view::npos ? all.npos : bar - pos);
        if (one == v) {
            return true;
        }
        if (bar == std::string_view::npos) {
            break;
        }
        pos = bar + 1;
    }
    return false;
}

} // namespace

ParamBase::ParamBase(const char* name, ParamKind kind, const char* help, const char* choices)
    : name_(name), kind_(kind), help_(help), choices_(choices)
{
    registry().push_back(this);
}

ParamBase::~ParamBase()
{
    auto& r = registry();
    r.erase(std::remove(r.begin(), r.end(), this), r.end());
}

std::string ParamBase::env_name() const
{
    std::string out = "ULMPI_";
    for (const char* p = name_; *p != '\0'; ++p) {
        out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(*p))));
    }
    return out;
}

const char* ParamBase::env_value() const
{
    return std::getenv(env_name().c_str());
}

// The first get() parses the environment. Threads may get there at once (the
// unit tests run several engines in one process; a program may read a
// parameter from two threads): the parse runs under one lock for all
// parameters, and loaded_ (release/acquire) publishes the value, so later
// reads cost one load. A get() of the same parameter from inside its own
// parse or error message (same thread; the lock is recursive) sees loading_
// and reads the value as it is.
void ParamBase::load_once() const
{
    if (loaded_.load(std::memory_order_acquire)) {
        return;
    }
    static std::recursive_mutex load_lock;
    std::lock_guard<std::recursive_mutex> lock(load_lock);
    if (loaded_.load(std::memory_order_relaxed) || loading_) {
        return;
    }
    loading_ = true;
    std::string why;
    bool ok = const_cast<ParamBase*>(this)->reload(why);
    loaded_.store(true, std::memory_order_release);
    if (!ok) {
        ULMPI_ERROR("%s: %s; using the default %s", env_name().c_str(), why.c_str(),
                    default_text().c_str());
    }
}

bool parse_integer(std::string_view text, std::int64_t& out)
{
    std::string s(text);
    if (s.empty()) {
        return false;
    }
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 0);
    if (errno != 0 || end == s.c_str() || *end != '\0') {
        return false;
    }
    out = v;
    return true;
}

bool parse_size(std::string_view text, std::uint64_t& out)
{
    std::string s = lower(text);
    if (s.empty() || s.find('-') != std::string::npos) { // also " -1": strtoull skips blanks
        return false;
    }
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    if (errno != 0 || end == s.c_str()) {
        return false;
    }
    std::string suffix(end);
    unsigned long long mult = 1;
    if (suffix.empty() || suffix == "b") {
        mult = 1;
    } else if (suffix == "k" || suffix == "kb" || suffix == "kib") {
        mult = 1ULL << 10;
    } else if (suffix == "m" || suffix == "mb" || suffix == "mib") {
        mult = 1ULL << 20;
    } else if (suffix == "g" || suffix == "gb" || suffix == "gib") {
        mult = 1ULL << 30;
    } else {
        return false;
    }
    if (v > ~0ULL / mult) {
        return false;
    }
    out = v * mult;
    return true;
}

bool parse_boolean(std::string_view text, bool& out)
{
    std::string s = lower(text);
    if (s == "1" || s == "on" || s == "yes" || s == "true" || s == "enable" || s == "enabled") {
        out = true;
        return true;
    }
    if (s == "0" || s == "off" || s == "no" || s == "false" || s == "disable" ||
        s == "disabled") {
        out = false;
        return true;
    }
    return false;
}

bool parse_real(std::string_view text, double& out)
{
    std::string s(text);
    if (s.empty()) {
        return false;
    }
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(s.c_str(), &end);
    if (errno != 0 || *end != '\0') {
        return false;
    }
    out = v;
    return true;
}

template <> std::string IntParam::to_text(const std::int64_t& v) { return std::to_string(v); }
template <> std::string SizeParam::to_text(const std::uint64_t& v)
{
    if (v != 0 && v % (1ULL << 30) == 0) {
        return std::to_string(v >> 30) + "G";
    }
    if (v != 0 && v % (1ULL << 20) == 0) {
        return std::to_string(v >> 20) + "M";
    }
    if (v != 0 && v % (1ULL << 10) == 0) {
        return std::to_string(v >> 10) + "K";
    }
    return std::to_string(v);
}
template <> std::string BoolParam::to_text(const bool& v) { return v ? "on" : "off"; }
template <> std::string RealParam::to_text(const double& v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}
template <> std::string TextParam::to_text(const std::string& v) { return v; }
template <> std::string ChoiceParam::to_text(const std::string& v) { return v; }

template <> bool IntParam::parse(const char* text, std::int64_t& out, std::string& is_not) const
{
    is_not = "not an integer";
    return parse_integer(text, out);
}

template <> bool SizeParam::parse(const char* text, std::uint64_t& out, std::string& is_not) const
{
    is_not = "not a size (a number with optional K, M or G)";
    return parse_size(text, out);
}

template <> bool BoolParam::parse(const char* text, bool& out, std::string& is_not) const
{
    is_not = "not on/off";
    return parse_boolean(text, out);
}

template <> bool RealParam::parse(const char* text, double& out, std::string& is_not) const
{
    is_not = "not a number";
    return parse_real(text, out);
}

template <> bool TextParam::parse(const char* text, std::string& out, std::string&) const
{
    out = text;
    return true;
}

template <> bool ChoiceParam::parse(const char* text, std::string& out, std::string& is_not) const
{
    std::string v = lower(text);
    if (!in_choices(choices(), v)) {
        is_not = std::string("not one of ") + choices();
        return false;
    }
    out = v;
    return true;
}

template <class T, ParamKind K> bool Param<T, K>::reload(std::string& why)
{
    if (forced_) {
        return true;
    }
    const char* e = env_value();
    if (e == nullptr) {
        value_ = default_; // unset again: back to the default
        return true;
    }
    std::string is_not;
    if (!parse(e, value_, is_not)) {
        why = std::string("'") + e + "' is " + is_not;
        value_ = default_;
        return false;
    }
    return true;
}

template bool IntParam::reload(std::string&);
template bool SizeParam::reload(std::string&);
template bool BoolParam::reload(std::string&);
template bool RealParam::reload(std::string&);
template bool TextParam::reload(std::string&);
template bool ChoiceParam::reload(std::string&);

std::vector<ParamBase*> all_params()
{
    std::vector<ParamBase*> out = registry();
    std::sort(out.begin(), out.end(),
              [](ParamBase* a, ParamBase* b) { return std::strcmp(a->name(), b->name()) < 0; });
    return out;
}

ParamBase* find_param(std::string_view name)
{
    std::string want = lower(name);
    for (ParamBase* p : registry()) {
        if (want == p->name()) {
            return p;
        }
    }
    return nullptr;
}

bool is_runtime_variable(std::string_view env_name)
{
    static constexpr std::string_view contract[] = {
        "ULMPI_RANK",       "ULMPI_SIZE",      "ULMPI_LOCAL_RANK", "ULMPI_LOCAL_SIZE", "ULMPI_LOCAL_CPUS",
        "ULMPI_NODE_ID",    "ULMPI_NUM_NODES", "ULMPI_HOST",       "ULMPI_JOBID",
        "ULMPI_BOOT_ADDR",  "ULMPI_JOB_SECRET", "ULMPI_UNIVERSE_SIZE", "ULMPI_APPNUM",
        "ULMPI_RESTARTED",  "ULMPI_INCARNATION", "ULMPI_NOTICE_FD", "ULMPI_SHM_FD", "ULMPI_RESPAWNABLE",
        "ULMPI_PEER_INCARNATIONS", "ULMPI_FIRST_SLOT", "ULMPI_WORLD_RANKS", "ULMPI_SPAWN_GROUPS",
        "ULMPI_PARENT",
    };
    for (std::string_view c : contract) {
        if (env_name == c) {
            return true;
        }
    }
    // Variables of the tools (mpicc/mpicxx overrides, test harness knobs).
    return env_name.starts_with("ULMPI_CC") || env_name.starts_with("ULMPI_CXX") ||
           env_name.starts_with("ULMPI_TEST_") || env_name.starts_with("ULMPI_PREFIX");
}

ConfigReport config_validate()
{
    ConfigReport report;
    for (ParamBase* p : registry()) {
        std::string why;
        if (!p->reload(why)) {
            report.errors.push_back(p->env_name() + ": " + why);
        }
    }
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string_view kv(*e);
        if (!kv.starts_with("ULMPI_")) {
            continue;
        }
        std::string_view name = kv.substr(0, kv.find('='));
        if (is_runtime_variable(name)) {
            continue;
        }
        std::string pname = lower(name.substr(6));
        if (find_param(pname) == nullptr) {
            report.warnings.push_back(std::string(name) +
                                      " names no parameter (ulmpi_info lists them all)");
        }
    }
    return report;
}

} // namespace ulmpi::rt
