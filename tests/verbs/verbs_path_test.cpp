#include "tests/verbs/verbs_pair.h"
