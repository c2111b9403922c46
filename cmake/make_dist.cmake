# The release archive: `cmake --install` of the build into a staging
# directory named like the archive, then a tar.gz of it with fixed owners and
# order (the same build packs to the same bytes, apart from gzip).
#   cmake -DBUILD_DIR=build -DNAME=sightline-0.1.0-linux-x86_64 -P make_dist.cmake
# Writes ${BUILD_DIR}/${NAME}.tar.gz.
set(stage_root ${BUILD_DIR}/dist)
file(REMOVE_RECURSE ${stage_root})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${stage_root}/${NAME} --strip
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
if(DEFINED ENV{SOURCE_DATE_EPOCH})
  set(mtime "@$ENV{SOURCE_DATE_EPOCH}")
else()
  string(TIMESTAMP mtime "@%s")
endif()
execute_process(
  COMMAND tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=${mtime}
          -czf ${BUILD_DIR}/${NAME}.tar.gz -C ${stage_root} ${NAME}
  COMMAND_ERROR_IS_FATAL ANY)
file(REMOVE_RECURSE ${stage_root})
message(STATUS "${BUILD_DIR}/${NAME}.tar.gz")
