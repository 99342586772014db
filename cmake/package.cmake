# The installable library: libqinfer.so (only QINFER_API symbols exported) and libqinfer.a,
# both built from the layers' object files; headers, tools, a CMake package
# (find_package(qinfer) -> qinfer::qinfer) and a pkg-config file.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(QINFER_LAYERS qinfer_kernels qinfer_loader qinfer_tokenizer qinfer_models qinfer_engine)

add_library(qinfer SHARED)
add_library(qinfer_static STATIC)
foreach(lib qinfer qinfer_static)
  foreach(layer ${QINFER_LAYERS})
    target_sources(${lib} PRIVATE $<TARGET_OBJECTS:${layer}>)
  endforeach()
  # Consumers compile qinfer.hpp as C++20 whatever their compiler's default standard.
  target_compile_features(${lib} PUBLIC cxx_std_20)
  target_include_directories(${lib} INTERFACE
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  if(QINFER_OPENMP)
    target_link_libraries(${lib} PRIVATE OpenMP::OpenMP_CXX)
  endif()
endforeach()
set_target_properties(qinfer PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
target_link_options(qinfer PRIVATE -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/qinfer.map)
set_property(TARGET qinfer APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/qinfer.map)
set_target_properties(qinfer_static PROPERTIES OUTPUT_NAME qinfer)
add_library(qinfer::qinfer ALIAS qinfer)
add_library(qinfer::qinfer_static ALIAS qinfer_static)

install(TARGETS qinfer qinfer_static EXPORT qinferTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/qinfer/qinfer.hpp include/qinfer/qinfer.h include/qinfer/error.hpp
              include/qinfer/export.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qinfer)
install(EXPORT qinferTargets NAMESPACE qinfer:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qinfer)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/qinferConfig.cmake.in
  ${CMAKE_BINARY_DIR}/qinferConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qinfer)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/qinferConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/qinferConfig.cmake ${CMAKE_BINARY_DIR}/qinferConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qinfer)
# The .pc file finds the prefix from its own place, so `cmake --install --prefix X` works.
file(RELATIVE_PATH QINFER_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" QINFER_PC_TO_PREFIX "${QINFER_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/qinfer.pc.in ${CMAKE_BINARY_DIR}/qinfer.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/qinfer.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
