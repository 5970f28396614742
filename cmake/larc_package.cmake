# larc as a CMake package: after `cmake --install`, `find_package(larc)` gives the libraries
# larc::common, larc::reference, larc::cases, larc::fixtures, larc::harness and, where CUDA built it, larc::gpu (README "larc as
# a CMake package"); without CUDA, larc::gpu_emulated, the host emulation the harness links instead.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(LARC_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/larc)
set(larc_exported_targets)
foreach(part common reference cases fixtures harness gpu gpu_emulated)
  if(TARGET larc_${part})
    set_target_properties(larc_${part} PROPERTIES EXPORT_NAME ${part})
    if(NOT part MATCHES "^gpu" AND NOT part STREQUAL "common")
      # The headers need C++20 with GNU extensions (Boost's float128 literals): CMAKE_CXX_EXTENSIONS ON.
      target_compile_features(larc_${part} PUBLIC cxx_std_20)
    endif()
    if(LARC_SANITIZE)  # programs linking a sanitized larc need the sanitizer runtimes too
      target_link_options(larc_${part} INTERFACE -fsanitize=address,undefined)
    endif()
    list(APPEND larc_exported_targets larc_${part})
    string(REPLACE "_emulated" "" source_dir ${part})  # the emulation's API is gpu/'s
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${source_dir}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endforeach()

install(TARGETS ${larc_exported_targets} EXPORT larcTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS larc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT larcTargets NAMESPACE larc:: DESTINATION ${LARC_PACKAGE_DIR})

if(TARGET larc_gpu)
  set(LARC_PACKAGE_HAS_GPU ON)
else()
  set(LARC_PACKAGE_HAS_GPU OFF)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/larcConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/larcConfig.cmake INSTALL_DESTINATION ${LARC_PACKAGE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/larcConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/larcConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/larcConfigVersion.cmake
  DESTINATION ${LARC_PACKAGE_DIR})
