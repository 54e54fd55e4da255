# The dashboard's files, copied next to jobctld at build time (docs/dashboard.md): web/*.html,
# *.css, *.js, *.svg into <jobctld's folder>/web, plus Chart.js from Debian's libjs-chart.js
# (scripts/setup.sh installs it) as web/vendor/chart.min.js. jobctld finds that folder next to its
# binary (daemon/http/static_files.h), so a build tree serves the dashboard with no configuration.
# The copy runs on every build (copy_if_different: cheap) so an edited file is served after
# `cmake --build`. npm is for the browser tests only (playwright-core).
#
# Included from daemon/CMakeLists.txt after the jobctld target.
set(JOBCTL_CHART_JS /usr/share/javascript/chart.js/chart.min.js CACHE FILEPATH
    "Chart.js (UMD build) served by the dashboard; Debian's libjs-chart.js installs it here")
set(_jobctl_web_src ${JOBCTL_SOURCE_ROOT}/web)
add_custom_target(jobctl-web ALL
  COMMAND ${CMAKE_COMMAND} -DSRC=${_jobctl_web_src} -DDST=$<TARGET_FILE_DIR:jobctld>/web
          -DCHART_JS=${JOBCTL_CHART_JS} -P ${_jobctl_web_src}/copy_web.cmake
  COMMENT "Copying the dashboard (web/) next to jobctld"
  VERBATIM)
add_dependencies(jobctld jobctl-web)
