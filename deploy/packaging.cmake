# Debian packages (docs/DESIGN.md §11): `cpack -G DEB` in a build configured with
# -DCMAKE_INSTALL_PREFIX=/usr (tests/packages/package_test.sh does it) makes
#   basalt-server        the daemons (basalt-server, basalt-master), the shell (basalt),
#                        basalt-export-snapshot,
#                        basalt-bench, the systemd units, /etc/basalt/*.conf (every setting,
#                        commented), the `basalt` system user and /var/lib/basalt;
#   libbasalt-client-dev libbasalt-client.so, the headers, a pkg-config file (basalt-client) and a
#                        CMake package (find_package(Basalt), target Basalt::client).
# The dependencies are the system's shared libraries as dpkg-shlibdeps finds them, and Abseil's
# headers for the client's.
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "Debian packages: configure with -DCMAKE_INSTALL_PREFIX=/usr to make them (cpack -G DEB)")
  return()
endif()

install(FILES deploy/systemd/basalt-server.service deploy/systemd/basalt-master.service
              deploy/systemd/basalt-regionserver.service
        DESTINATION lib/systemd/system COMPONENT server)
install(FILES deploy/basalt.conf deploy/systemd/master.conf deploy/systemd/regionserver.conf
        DESTINATION /etc/basalt COMPONENT server)
install(FILES README.md docs/DESIGN.md deploy/RDMA.md deploy/RECOVERY.md
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/basalt-server COMPONENT server)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME basalt)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "Basalt")
set(CPACK_PACKAGE_CONTACT "Basalt developers <basalt-dev@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Distributed wide-column store on the Bigtable/HBase model")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL server client)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://basalt.invalid/")

set(CPACK_DEBIAN_SERVER_PACKAGE_NAME basalt-server)
set(CPACK_COMPONENT_SERVER_DESCRIPTION
    "Basalt server, master, shell and benchmark\n Region servers serve tables of versioned cells over gRPC and RDMA verbs;\n masters place regions and recover failed servers through ZooKeeper.")
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA
    "${PROJECT_SOURCE_DIR}/deploy/debian/postinst;${PROJECT_SOURCE_DIR}/deploy/debian/postrm;${PROJECT_SOURCE_DIR}/deploy/debian/conffiles")
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_CLIENT_PACKAGE_NAME libbasalt-client-dev)
set(CPACK_DEBIAN_CLIENT_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_CLIENT_DESCRIPTION
    "Basalt client library and headers\n libbasalt-client.so, the C++ headers (basalt/client.h), a pkg-config file\n (basalt-client) and a CMake package: find_package(Basalt), target Basalt::client.")
set(CPACK_DEBIAN_CLIENT_PACKAGE_DEPENDS "libabsl-dev")

include(CPack)
