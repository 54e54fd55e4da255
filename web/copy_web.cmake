cmake_minimum_required(VERSION 3.21)
# cmake -DSRC=<source web/> -DDST=<served web root> -DCHART_JS=<chart.min.js> -P copy_web.cmake
# (see dashboard.cmake). Copies the app's own files and the chart library (Debian's libjs-chart.js,
# as vendor/chart.min.js), and removes files from DST that no longer have a source (so a deleted
# page is not served on). Chart.js missing is not an error: the dashboard then shows its tables and
# says that charts need libjs-chart.js.
file(GLOB_RECURSE app RELATIVE ${SRC} ${SRC}/*.html ${SRC}/*.css ${SRC}/*.js ${SRC}/*.svg)
list(FILTER app EXCLUDE REGEX "^node_modules/")
set(wanted)
foreach(f IN LISTS app)
  get_filename_component(dir ${DST}/${f} DIRECTORY)
  file(MAKE_DIRECTORY ${dir})
  file(COPY_FILE ${SRC}/${f} ${DST}/${f} ONLY_IF_DIFFERENT)
  list(APPEND wanted ${f})
endforeach()

if(CHART_JS AND EXISTS ${CHART_JS})
  file(MAKE_DIRECTORY ${DST}/vendor)
  # The file itself, not a link into /usr/share: the web root never follows links out of itself.
  file(COPY_FILE ${CHART_JS} ${DST}/vendor/chart.min.js ONLY_IF_DIFFERENT)
  list(APPEND wanted vendor/chart.min.js)
else()
  message(STATUS "dashboard: Chart.js not found at '${CHART_JS}' (Debian's libjs-chart.js: scripts/setup.sh); charts will be unavailable")
endif()

file(GLOB_RECURSE served RELATIVE ${DST} ${DST}/*)
foreach(f IN LISTS served)
  if(NOT f IN_LIST wanted)
    file(REMOVE ${DST}/${f})
  endif()
endforeach()
