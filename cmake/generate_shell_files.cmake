# SPDX-License-Identifier: MIT
# Runs the built optadvisor to write its man page and shell completion scripts:
#   cmake -DEXE=path/to/optadvisor -DOUT_DIR=dir -P generate_shell_files.cmake
# They come from the program's own CLI definition, so they list exactly its
# commands and options; the builder's overlays must not leak into them.
unset(ENV{OPTADVISOR_DATA_DIR})
unset(ENV{OPTADVISOR_DETECT_FIXTURES})
set(ENV{NO_COLOR} 1)

foreach(spec "man;optadvisor.1" "completion;bash;bash/optadvisor" "completion;zsh;zsh/_optadvisor"
             "completion;fish;fish/optadvisor.fish")
  list(POP_BACK spec output)
  get_filename_component(dir "${OUT_DIR}/${output}" DIRECTORY)
  file(MAKE_DIRECTORY "${dir}")
  execute_process(COMMAND "${EXE}" ${spec}
                  OUTPUT_FILE "${OUT_DIR}/${output}.tmp"
                  ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "'${EXE} ${spec}' failed (${rc}): ${err}")
  endif()
  file(RENAME "${OUT_DIR}/${output}.tmp" "${OUT_DIR}/${output}")
endforeach()
