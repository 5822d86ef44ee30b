# ordo compiled to WebAssembly (tools/web/CMakeLists.txt, a project of its own built with emscripten's
# emcmake), for the page that runs itself: `ordo view --standalone` reads build/web/ordo_web.{wasm,js}.
# Not in the default build (it compiles the engine once more): cmake --build build --target ordo_web.
# The compiler cache serves it as it serves the main build.
find_program(ORDO_EMCMAKE emcmake)
set(web_dir ${CMAKE_BINARY_DIR}/web)
if(ORDO_EMCMAKE)
  file(GLOB_RECURSE web_inputs CONFIGURE_DEPENDS
    ${PROJECT_SOURCE_DIR}/common/*.cpp ${PROJECT_SOURCE_DIR}/common/*.h
    ${PROJECT_SOURCE_DIR}/engine/*.cpp ${PROJECT_SOURCE_DIR}/engine/*.h
    ${PROJECT_SOURCE_DIR}/tokenizer/*.cpp ${PROJECT_SOURCE_DIR}/tokenizer/*.h
    ${PROJECT_SOURCE_DIR}/lib/*.cpp ${PROJECT_SOURCE_DIR}/lib/*.h
    ${PROJECT_SOURCE_DIR}/tools/cli/*.cpp ${PROJECT_SOURCE_DIR}/tools/cli/*.h
    ${PROJECT_SOURCE_DIR}/tools/serve/*.cpp ${PROJECT_SOURCE_DIR}/tools/serve/*.h
    ${PROJECT_SOURCE_DIR}/tools/teach/*.cpp ${PROJECT_SOURCE_DIR}/tools/teach/*.h ${PROJECT_SOURCE_DIR}/tools/teach/view/*
    ${PROJECT_SOURCE_DIR}/tools/web/*)
  set(launcher)
  if(CMAKE_CXX_COMPILER_LAUNCHER)
    set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER})
  endif()
  include(ProcessorCount)
  ProcessorCount(cores)
  # emscripten's JavaScript optimizer needs Debian's node-acorn, in /usr/share/nodejs, where a node
  # other than Debian's does not look.
  set(env ${CMAKE_COMMAND} -E env NODE_PATH=/usr/share/nodejs)
  add_custom_command(
    OUTPUT ${web_dir}/ordo_web.wasm ${web_dir}/ordo_web.js
    COMMAND ${env} ${ORDO_EMCMAKE} ${CMAKE_COMMAND} -S ${PROJECT_SOURCE_DIR}/tools/web -B ${web_dir}
            -DCMAKE_BUILD_TYPE=Release ${launcher}
    COMMAND ${env} ${CMAKE_COMMAND} --build ${web_dir} --parallel ${cores}
    DEPENDS ${web_inputs}
    COMMENT "Compiling ordo to WebAssembly with emscripten (tools/web)")
  add_custom_target(ordo_web DEPENDS ${web_dir}/ordo_web.wasm ${web_dir}/ordo_web.js)
else()
  add_custom_target(ordo_web
    COMMAND ${CMAKE_COMMAND} -E echo "error: ordo_web: emscripten is not installed (apt-get install emscripten, then cmake again)"
    COMMAND ${CMAKE_COMMAND} -E false)
endif()
# Installed where `ordo view --standalone` looks beside an installed binary (share/ordo/web), when it
# was built (cmake --build build --target ordo_web): optional, as the target is.
install(FILES ${web_dir}/ordo_web.wasm ${web_dir}/ordo_web.js DESTINATION ${CMAKE_INSTALL_DATADIR}/ordo/web OPTIONAL)
