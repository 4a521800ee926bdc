// program_cxx.cpp -- program.c compiled as C++ (C++98 and C++20): mpi.h and
// the C subset a program is written in must work from C++ too.
#include "program.c"
