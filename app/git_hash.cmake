# Run at every build (cmake -P): writes OUTPUT, a header that holds the commit of SOURCE_DIR
# ("-dirty" with changed tracked files), or "unknown" where SOURCE_DIR is not the top of a git
# repository (a tarball unpacked inside another); rewritten only when the text changes.
#   cmake -DSOURCE_DIR=<tree> -DOUTPUT=<header> [-DGIT_EXECUTABLE=git] -P git_hash.cmake
if(NOT SOURCE_DIR OR NOT OUTPUT)
  message(FATAL_ERROR "git_hash.cmake needs -DSOURCE_DIR=... and -DOUTPUT=...")
endif()
if(NOT GIT_EXECUTABLE)
  set(GIT_EXECUTABLE git)
endif()

set(hash unknown)
execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse --show-toplevel
  RESULT_VARIABLE status OUTPUT_VARIABLE top OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(status EQUAL 0)
  # Compared as real paths: the tree may be reached through a link.
  file(REAL_PATH "${SOURCE_DIR}" source_real)
  file(REAL_PATH "${top}" top_real)
  if(source_real STREQUAL top_real)
    # --exclude '*': the commit, never a tag; a file merely touched is not "dirty".
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} describe --always --dirty
                            --abbrev=12 --exclude *
      RESULT_VARIABLE status OUTPUT_VARIABLE described OUTPUT_STRIP_TRAILING_WHITESPACE
      ERROR_QUIET)
    if(status EQUAL 0 AND described)
      set(hash ${described})
    endif()
  endif()
endif()

string(CONCAT text "// Generated at build time by app/git_hash.cmake: the source tree's commit.\n"
  "#pragma once\n\nnamespace gpurelay {\n"
  "inline constexpr const char* kGitHash = \"${hash}\";\n"
  "}  // namespace gpurelay\n")
set(old "")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUTPUT} "${text}")
endif()
