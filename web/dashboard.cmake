# The dashboard's files, copied next to jobctld at build time (docs/dashboard.md): web/*.html,
# *.css, *.js, *.svg into <jobctld's folder>/web, plus Chart.js from web/node_modules (installed by
# `scripts/setup.sh --browser`, i.e. `npm ci` in web/) or web/vendor/ into web/vendor/. jobctld
# finds that folder next to its binary (daemon/http/static_files.h), so a build tree serves the
# dashboard with no configuration. The copy runs on every build (copy_if_different: cheap) so an
# edited file is served after `cmake --build`.
#
# Included from daemon/CMakeLists.txt after the jobctld target.
set(_jobctl_web_src ${JOBCTL_SOURCE_ROOT}/web)
add_custom_target(jobctl-web ALL
  COMMAND ${CMAKE_COMMAND} -DSRC=${_jobctl_web_src} -DDST=$<TARGET_FILE_DIR:jobctld>/web
          -P ${_jobctl_web_src}/copy_web.cmake
  COMMENT "Copying the dashboard (web/) next to jobctld"
  VERBATIM)
add_dependencies(jobctld jobctl-web)
