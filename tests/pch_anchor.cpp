// The source of larc_test_pch (tests/CMakeLists.txt), whose precompiled header every test program uses.
