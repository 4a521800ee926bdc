// The parameter registry. Every tunable of ulmpi is declared once, next to the
// code that uses it, with a name, a type, a default and one line of help:
//
//     const rt::SizeParam eager_limit{"ulm_eager_limit", 4096, "bytes sent eagerly"};
//
// Its value comes from the environment variable ULMPI_<NAME> (upper case;
// mpirun --param name=value sets it for every rank) or else the default.
// ulmpi_info lists the registry. config_validate() parses every value once so
// that a mistyped setting stops MPI_Init with a message naming it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ulmpi::rt {

enum class ParamKind { integer, size, boolean, real, text, choice };

class ParamBase {
public:
    ParamBase(const char* name, ParamKind kind, const char* help, const char* choices = nullptr);
    ParamBase(const ParamBase&) = delete;
    ParamBase& operator=(const ParamBase&) = delete;
    virtual ~ParamBase();

    const char* name() const { return name_; }
    const char* help() const { return help_; }
    ParamKind kind() const { return kind_; }
    const char* choices() const { return choices_; } // "a|b|c" for choice parameters
    std::string env_name() const;                   // ULMPI_<NAME>
    const char* env_value() const;                  // nullptr when unset
    virtual std::string default_text() const = 0;
    virtual std::string value_text() const = 0;
    // Parse the environment value again; false (with a reason) when it is malformed.
    virtual bool reload(std::string& why) = 0;

protected:
    void load_once() const;

private:
    const char* name_;
    ParamKind kind_;
    const char* help_;
    const char* choices_;
    mutable std::atomic<bool> loaded_{false}; // value_ final (see load_once)
    mutable bool loading_ = false;            // under the load lock
};

// Parsers shared by the typed parameters and by mpirun's option checks.
bool parse_integer(std::string_view text, std::int64_t& out);
bool parse_size(std::string_view text, std::uint64_t& out); // 64k, 4M, 1G suffixes
bool parse_boolean(std::string_view text, bool& out);       // on/off, yes/no, true/false, 1/0
bool parse_real(std::string_view text, double& out);

template <class T, ParamKind K> class Param final : public ParamBase {
public:
    Param(const char* name, T def, const char* help, const char* choices = nullptr)
        : ParamBase(name, K, help, choices), default_(def), value_(def)
    {
    }
    const T& get() const
    {
        load_once();
        return value_;
    }
    // Tests and start-up code may override a value in-process.
    void set(T v) { value_ = v, forced_ = true; }
    std::string default_text() const override { return to_text(default_); }
    std::string value_text() const override { return to_text(get()); }
    bool reload(std::string& why) override;

private:
    static std::string to_text(const T& v);
    // Parses `text` into `out`; false with what the text is not in `is_not`.
    bool parse(const char* text, T& out, std::string& is_not) const;
    T default_;
    T value_;
    bool forced_ = false;
};

using IntParam = Param<std::int64_t, ParamKind::integer>;
using SizeParam = Param<std::uint64_t, ParamKind::size>;
using BoolParam = Param<bool, ParamKind::boolean>;
using RealParam = Param<double, ParamKind::real>;
using TextParam = Param<std::string, ParamKind::text>;
using ChoiceParam = Param<std::string, ParamKind::choice>;

// Every registered parameter, sorted by name.
std::vector<ParamBase*> all_params();
ParamBase* find_param(std::string_view name);

// Parses every parameter from the environment. errors: malformed values;
// warnings: ULMPI_* variables that name no parameter (typos).
struct ConfigReport {
    std::vector<std::string> errors;
    std::vector<std::string> warnings;
};
ConfigReport config_validate();

// Environment variables that belong to the launcher/bootstrap contract and are
// not parameters (ULMPI_RANK, ...); config_validate does not report them.
bool is_runtime_variable(std::string_view env_name);

} // namespace ulmpi::rt
