# Builds the admin web UI (ui/, Vite) and embeds it (cmake/ui_embed.cmake). Run by the build
# (target tg_ui_bundle, option TOLLGATE_UI) as
#   cmake -DSRC=<repo>/ui -DDIST=<build>/ui -DOUT=<build>/generated/ui_bundle.cpp -DNPM=<npm> -P cmake/ui_build.cmake
# 1. `npm ci` when ui/node_modules is missing or older than ui/package-lock.json (the lockfile
#    is the only source of versions);
# 2. `npm run build` with the output in DIST (the bundle is never written into the source tree);
# 3. the generated C++ asset table in OUT.
cmake_minimum_required(VERSION 3.25)
foreach(v SRC DIST OUT NPM)
  if(NOT ${v})
    message(FATAL_ERROR "ui_build.cmake: ${v} is required")
  endif()
endforeach()
set(installed "${SRC}/node_modules/.package-lock.json")
if(NOT EXISTS "${installed}" OR "${SRC}/package-lock.json" IS_NEWER_THAN "${installed}")
  message(STATUS "UI: npm ci (ui/node_modules missing or older than ui/package-lock.json)")
  execute_process(COMMAND "${NPM}" ci --no-audit --no-fund --loglevel=error
                  WORKING_DIRECTORY "${SRC}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "UI: `npm ci` failed in ${SRC} (exit ${rc}). The npm registry must be reachable; "
                        "or configure with -DTOLLGATE_UI=OFF to build the gateway without its web UI.")
  endif()
  file(TOUCH "${installed}")
endif()
execute_process(COMMAND "${NPM}" run build --silent -- --outDir "${DIST}" --emptyOutDir --logLevel warn
                WORKING_DIRECTORY "${SRC}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "UI: `npm run build` failed in ${SRC} (exit ${rc})")
endif()
include("${CMAKE_CURRENT_LIST_DIR}/ui_embed.cmake")
# The build's own record that this step ran (ui_embed leaves an unchanged file untouched).
file(TOUCH "${OUT}")
