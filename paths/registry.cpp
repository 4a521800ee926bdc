#include "paths/registry.h"

#include "runtime/config.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace ulmpi::path {
namespace {

std::vector<RegisteredPath>& table()
{
    static std::vector<RegisteredPath> t;
    return t;
}

struct NamedDecorator {
    const char* name;
    Decorator decorate;
};

std::vector<NamedDecorator>& decorators()
{
    static std::vector<NamedDecorator> d;
    return d;
}

const rt::TextParam include_param{
    "path_include", "self,shm,verbs,udp",
    "comma-separated list of paths to use (ulmpi_info lists the built ones)"};
const rt::TextParam exclude_param{
    "path_exclude", "",
    "comma-separated list of paths not to use, even when path_include names them"};

std::vector<std::string> split(const std::string& s)
{
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (!item.empty()) {
            out.push_back(item);
        }
    }
    return out;
}

} // namespace

bool path_selected(const char* name)
{
    for (const std::string& w : split(exclude_param.get())) {
        if (w == name) {
            return false;
        }
    }
    for (const std::string& w : split(include_param.get())) {
        if (w == name) {
            return true;
        }
    }
    return false;
}

Registrar::Registrar(const char* name, int priority, Factory factory)
{
    table().push_back({name, priority, factory});
}

DecoratorRegistrar::DecoratorRegistrar(const char* name, Decorator decorate)
{
    decorators().push_back({name, decorate});
}

std::vector<RegisteredPath> registered_paths()
{
    auto t = table();
    std::sort(t.begin(), t.end(),
              [](const RegisteredPath& a, const RegisteredPath& b) { return a.priority > b.priority; });
    return t;
}

std::vector<std::unique_ptr<Path>> make_paths(const rt::JobInfo& job, std::string& why)
{
    std::vector<std::unique_ptr<Path>> out;
    for (const rt::TextParam* param : {&include_param, &exclude_param}) {
        for (const std::string& w : split(param->get())) {
            bool known = std::any_of(table().begin(), table().end(),
                                     [&](const RegisteredPath& r) { return w == r.name; });
            if (!known) {
                why = param->env_name() + " names an unknown path '" + w + "' (built paths:";
                for (const auto& r : registered_paths()) {
                    why += std::string(" ") + r.name;
                }
                why += ")";
                return {};
            }
        }
    }
    for (const auto& r : registered_paths()) {
        if (!path_selected(r.name)) {
            continue;
        }
        // Empty: the kind is not usable for this job (e.g. one host only).
        for (std::unique_ptr<Path>& p : r.factory(job)) {
            for (const auto& d : decorators()) {
                p = d.decorate(std::move(p), job);
            }
            out.push_back(std::move(p));
        }
    }
    return out;
}

} // namespace ulmpi::path
