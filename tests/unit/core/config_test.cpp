// The parameter registry (runtime/config.h): parsers, environment names,
// typed parameters read from ULMPI_<NAME>, and config_validate's report.
#include "runtime/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace ulmpi::rt {
namespace {

const SizeParam test_size{"unittest_size", 4096, "a size parameter of the unit tests"};
const IntParam test_int{"unittest_int", -3, "an integer parameter of the unit tests"};
const BoolParam test_bool{"unittest_bool", true, "a boolean parameter of the unit tests"};
const RealParam test_real{"unittest_real", 1.5, "a real parameter of the unit tests"};
const TextParam test_text{"unittest_text", "abc", "a text parameter of the unit tests"};
const ChoiceParam test_choice{"unittest_choice", "fast", "a choice parameter of the unit tests",
                              "fast|safe|auto"};

// Sets an environment variable for the scope of a test.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name)
    {
        if (const char* old = std::getenv(name)) {
            had_ = true;
            old_ = old;
        }
        ::setenv(name, value, 1);
    }
    ~ScopedEnv()
    {
        if (had_) {
            ::setenv(name_.c_str(), old_.c_str(), 1);
        } else {
            ::unsetenv(name_.c_str());
        }
    }

private:
    std::string name_;
    std::string old_;
    bool had_ = false;
};

template <class P> P& mut(const P& p) { return const_cast<P&>(p); }

bool contains_entry(const std::vector<std::string>& v, const std::string& needle)
{
    return std::any_of(v.begin(), v.end(),
                       [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

TEST(ParseSize, accepts_plain_numbers_and_binary_suffixes)
{
    struct Case {
        const char* text;
        std::uint64_t want;
    } cases[] = {
        {"0", 0},
        {"4096", 4096},
        {"10b", 10},
        {"64k", 64u << 10},
        {"64K", 64u << 10},
        {"2kb", 2u << 10},
        {"3KiB", 3u << 10},
        {"4M", 4u << 20},
        {"4mb", 4u << 20},
        {"5MiB", 5u << 20},
        {"1g", 1ULL << 30},
        {"2GB", 2ULL << 30},
        {"3gib", 3ULL << 30},
        {"0x10", 16},
        {"18446744073709551615", ~0ULL},
        {"16777215g", 16777215ULL << 30},
    };
    for (const Case& c : cases) {
        std::uint64_t v = 12345;
        EXPECT_TRUE(parse_size(c.text, v)) << c.text;
        EXPECT_EQ(v, c.want) << c.text;
    }
}

TEST(ParseSize, rejects_garbage_negative_and_overflow)
{
    for (const char* text : {"", "-1", "k", "12q", "1.5k", "4 M", "1t", "17179869184g",
                             "18446744073709551616", "99999999999999999999k", "kb"}) {
        std::uint64_t v = 777;
        EXPECT_FALSE(parse_size(text, v)) << "'" << text << "'";
        EXPECT_EQ(v, 777u) << "output must stay untouched on failure: " << text;
    }
}

TEST(ParseSize, rejects_negative_number_behind_whitespace)
{
    // strtoull skips leading blanks and negates "-1" into 2^64 - 1.
    for (const char* text : {" -1", "\t-4k", "  -0"}) {
        std::uint64_t v = 777;
        EXPECT_FALSE(parse_size(text, v)) << "'" << text << "' gave " << v;
    }
}

TEST(ParseBoolean, accepts_usual_spellings_in_any_case)
{
    for (const char* t : {"1", "on", "ON", "yes", "Yes", "true", "TRUE", "enable", "enabled"}) {
        bool v = false;
        EXPECT_TRUE(parse_boolean(t, v)) << t;
        EXPECT_TRUE(v) << t;
    }
    for (const char* t : {"0", "off", "Off", "no", "NO", "false", "False", "disable", "disabled"}) {
        bool v = true;
        EXPECT_TRUE(parse_boolean(t, v)) << t;
        EXPECT_FALSE(v) << t;
    }
}

TEST(ParseBoolean, rejects_anything_else)
{
    for (const char* t : {"", "2", "maybe", "y", "n", "onn", " on"}) {
        bool v = true;
        EXPECT_FALSE(parse_boolean(t, v)) << "'" << t << "'";
    }
}

TEST(ParseInteger, accepts_signed_decimal_and_hex_and_rejects_trailing_text)
{
    std::int64_t v = 0;
    EXPECT_TRUE(parse_integer("42", v));
    EXPECT_EQ(v, 42);
    EXPECT_TRUE(parse_integer("-7", v));
    EXPECT_EQ(v, -7);
    EXPECT_TRUE(parse_integer("0x1f", v));
    EXPECT_EQ(v, 31);
    for (const char* t : {"", "4x", "x", "1.0", "99999999999999999999"}) {
        EXPECT_FALSE(parse_integer(t, v)) << "'" << t << "'";
    }
}

TEST(ParseReal, accepts_numbers_and_rejects_trailing_text)
{
    double v = 0;
    EXPECT_TRUE(parse_real("2.5", v));
    EXPECT_DOUBLE_EQ(v, 2.5);
    EXPECT_TRUE(parse_real("-1e3", v));
    EXPECT_DOUBLE_EQ(v, -1000.0);
    EXPECT_FALSE(parse_real("", v));
    EXPECT_FALSE(parse_real("2.5x", v));
}

TEST(Param, env_name_is_prefixed_upper_case)
{
    EXPECT_EQ(test_size.env_name(), "ULMPI_UNITTEST_SIZE");
    EXPECT_EQ(test_choice.env_name(), "ULMPI_UNITTEST_CHOICE");
}

TEST(Param, is_found_by_name_in_any_case_and_listed_sorted)
{
    EXPECT_EQ(find_param("unittest_size"), &test_size);
    EXPECT_EQ(find_param("UNITTEST_SIZE"), &test_size);
    EXPECT_EQ(find_param("unittest_nothing"), nullptr);
    auto all = all_params();
    EXPECT_TRUE(std::is_sorted(all.begin(), all.end(), [](ParamBase* a, ParamBase* b) {
        return std::string(a->name()) < b->name();
    }));
    EXPECT_NE(std::find(all.begin(), all.end(), &test_bool), all.end());
}

TEST(Param, leaves_registry_when_destroyed)
{
    {
        IntParam scoped{"unittest_scoped", 1, "lives for one block"};
        EXPECT_EQ(find_param("unittest_scoped"), &scoped);
    }
    EXPECT_EQ(find_param("unittest_scoped"), nullptr);
}

TEST(Param, reads_default_when_environment_is_unset)
{
    ::unsetenv("ULMPI_UNITTEST_INT");
    std::string why;
    EXPECT_TRUE(mut(test_int).reload(why));
    EXPECT_EQ(test_int.get(), -3);
    EXPECT_EQ(test_int.default_text(), "-3");
}

TEST(Param, reads_value_from_environment)
{
    std::string why;
    {
        ScopedEnv e("ULMPI_UNITTEST_SIZE", "64k");
        ASSERT_TRUE(mut(test_size).reload(why)) << why;
        EXPECT_EQ(test_size.get(), 65536u);
        EXPECT_EQ(test_size.value_text(), "64K");
    }
    {
        ScopedEnv e("ULMPI_UNITTEST_BOOL", "off");
        ASSERT_TRUE(mut(test_bool).reload(why)) << why;
        EXPECT_FALSE(test_bool.get());
        EXPECT_EQ(test_bool.value_text(), "off");
    }
    {
        ScopedEnv e("ULMPI_UNITTEST_REAL", "0.25");
        ASSERT_TRUE(mut(test_real).reload(why)) << why;
        EXPECT_DOUBLE_EQ(test_real.get(), 0.25);
    }
    {
        ScopedEnv e("ULMPI_UNITTEST_TEXT", "hello,world");
        ASSERT_TRUE(mut(test_text).reload(why)) << why;
        EXPECT_EQ(test_text.get(), "hello,world");
    }
    {
        ScopedEnv e("ULMPI_UNITTEST_CHOICE", "SAFE");
        ASSERT_TRUE(mut(test_choice).reload(why)) << why;
        EXPECT_EQ(test_choice.get(), "safe");
    }
}

TEST(Param, falls_back_to_default_and_explains_when_value_is_bad)
{
    std::string why;
    {
        ScopedEnv e("ULMPI_UNITTEST_SIZE", "12q");
        EXPECT_FALSE(mut(test_size).reload(why));
        EXPECT_NE(why.find("12q"), std::string::npos) << why;
        EXPECT_EQ(test_size.get(), 4096u);
    }
    {
        why.clear();
        ScopedEnv e("ULMPI_UNITTEST_BOOL", "maybe");
        EXPECT_FALSE(mut(test_bool).reload(why));
        EXPECT_NE(why.find("maybe"), std::string::npos) << why;
        EXPECT_TRUE(test_bool.get());
    }
    {
        why.clear();
        ScopedEnv e("ULMPI_UNITTEST_CHOICE", "turbo");
        EXPECT_FALSE(mut(test_choice).reload(why));
        EXPECT_NE(why.find("fast|safe|auto"), std::string::npos) << why;
        EXPECT_EQ(test_choice.get(), "fast");
    }
    {
        why.clear();
        ScopedEnv e("ULMPI_UNITTEST_INT", "ten");
        EXPECT_FALSE(mut(test_int).reload(why));
        EXPECT_EQ(test_int.get(), -3);
    }
}

TEST(Param, set_overrides_environment)
{
    IntParam p{"unittest_forced", 5, "set() wins over the environment"};
    ScopedEnv e("ULMPI_UNITTEST_FORCED", "9");
    p.set(11);
    std::string why;
    EXPECT_TRUE(p.reload(why));
    EXPECT_EQ(p.get(), 11);
}

TEST(ConfigValidate, reports_malformed_values_by_variable_name)
{
    ScopedEnv e("ULMPI_UNITTEST_SIZE", "lots");
    ScopedEnv b("ULMPI_UNITTEST_BOOL", "perhaps");
    ConfigReport r = config_validate();
    EXPECT_TRUE(contains_entry(r.errors, "ULMPI_UNITTEST_SIZE"))
        << ::testing::PrintToString(r.errors);
    EXPECT_TRUE(contains_entry(r.errors, "ULMPI_UNITTEST_BOOL"))
        << ::testing::PrintToString(r.errors);
    EXPECT_FALSE(contains_entry(r.errors, "ULMPI_UNITTEST_INT"));
}

TEST(ConfigValidate, warns_about_unknown_ulmpi_variables_only)
{
    ScopedEnv typo("ULMPI_UNITTEST_SIZ", "1");
    ScopedEnv rank("ULMPI_RANK", "3");
    ScopedEnv harness("ULMPI_TEST_SOMETHING", "1");
    ScopedEnv other("NOT_ULMPI_UNITTEST", "1");
    ScopedEnv good("ULMPI_UNITTEST_INT", "4");
    ConfigReport r = config_validate();
    EXPECT_TRUE(contains_entry(r.warnings, "ULMPI_UNITTEST_SIZ "))
        << ::testing::PrintToString(r.warnings);
    EXPECT_FALSE(contains_entry(r.warnings, "ULMPI_RANK"));
    EXPECT_FALSE(contains_entry(r.warnings, "ULMPI_TEST_SOMETHING"));
    EXPECT_FALSE(contains_entry(r.warnings, "NOT_ULMPI"));
    EXPECT_FALSE(contains_entry(r.warnings, "ULMPI_UNITTEST_INT"));
    EXPECT_TRUE(r.errors.empty() || !contains_entry(r.errors, "UNITTEST_INT"));
    EXPECT_EQ(test_int.get(), 4);
}

TEST(ConfigValidate, knows_runtime_contract_variables)
{
    EXPECT_TRUE(is_runtime_variable("ULMPI_RANK"));
    EXPECT_TRUE(is_runtime_variable("ULMPI_JOB_SECRET"));
    EXPECT_TRUE(is_runtime_variable("ULMPI_CC"));
    EXPECT_FALSE(is_runtime_variable("ULMPI_ULM_EAGER_LIMIT"));
}

TEST(SizeParam, prints_largest_exact_suffix)
{
    SizeParam p{"unittest_print", 3u << 30, "printing"};
    EXPECT_EQ(p.default_text(), "3G");
    p.set(5u << 20);
    EXPECT_EQ(p.value_text(), "5M");
    p.set(1536);
    EXPECT_EQ(p.value_text(), "1536");
    p.set(0);
    EXPECT_EQ(p.value_text(), "0");
}

} // namespace
} // namespace ulmpi::rt
