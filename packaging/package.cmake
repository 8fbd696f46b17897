# What `cmake --install` puts in place beside the executable (its own rules are in
# cli/CMakeLists.txt, with the man page and shell completion), and the Debian package made
# of exactly that set: `cpack --config build/CPackConfig.cmake` (or `sh tools/setup.sh
# --package`) writes build/dedupsim_<version>_amd64.deb. Nothing reaches the package but
# through an install() rule, so `cmake --install` installs the same files
# (tests/package/ checks both).

include(GNUInstallDirs)

# Directories made by an install are rwxr-xr-x whatever the umask, as in a Debian package.
set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

# The consumer and scenario files, as in the repository (a scenario file names its
# consumer file by a path relative to it).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# The copyright file and the changelog where Debian's tools read them: a package whose
# version has no Debian revision is native, so its changelog is changelog.gz. Compressed
# without a name or time stamp (gzip -n), so the same changelog gives the same bytes.
set(DEDUPSIM_CHANGELOG_GZ ${CMAKE_BINARY_DIR}/changelog.gz)
add_custom_command(OUTPUT ${DEDUPSIM_CHANGELOG_GZ}
  COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/packaging/changelog > ${DEDUPSIM_CHANGELOG_GZ}
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/changelog
  COMMENT "Compressing packaging/changelog")
add_custom_target(dedupsim_changelog ALL DEPENDS ${DEDUPSIM_CHANGELOG_GZ})
add_dependencies(dedupsim dedupsim_changelog)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright ${DEDUPSIM_CHANGELOG_GZ}
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dedupsim)
# The version is the project's, which `dedupsim --version` prints too.
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "teaching simulator for idempotent message consumers")
set(CPACK_PACKAGE_DESCRIPTION
    "dedupsim runs named lessons that drive real message consumers against a real\n"
    "database (SQLite files, or PostgreSQL servers) with real transactions, lock\n"
    "waits and process crashes, and prints one line of measured figures per\n"
    "lesson. It grades consumers written as files, explores every interleaving\n"
    "of a strategy under each fault, and draws timelines and step-through pages.")
string(REPLACE ";" "" CPACK_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # dedupsim_<version>_<architecture>.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER
    "dedupsim maintainers <maintainers@users.noreply.a-seed-7abe601e.example>")
set(CPACK_DEBIAN_PACKAGE_SECTION education)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: computed by dpkg-shlibdeps from the libraries the executable links (SQLite, fmt,
# toml++, the C++ run time), with the versions it needs.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# What it only opens or starts: libpq is opened with dlopen when --backend postgres is used
# (lib/postgres/libpq.cpp), and the PostgreSQL server programs are started from the
# postgresql package's folders. The message brokers' servers and client libraries are for
# the brokers being added (--broker).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libpq5, postgresql")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nats-server, rabbitmq-server, libnats3.4, librabbitmq4")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
