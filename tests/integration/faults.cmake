# The faults of a real cluster: each made for real, each run bounded, the exit code,
# the one error line and what is left on disk checked. Included from tests/integration/CMakeLists.txt, which
# defines gpurelay_case, GPURELAY_PYTHON and GPURELAY_MPIRUN_STRING.

# Numeric keys: every conversion is range-checked, exit 2 with the valid range.
gpurelay_case(bad_timeout_tiny 2 --expect-exit 2 --expect-message "timeout_s (1e-09) must be between" -- --timeout-s 1e-9)
gpurelay_case(bad_timeout_huge 2 --expect-exit 2 --expect-message "timeout_s (1e+300) must be between" -- --timeout-s 1e300)
gpurelay_case(bad_alpha_float32 2 --expect-exit 2 --expect-message "outside float32's range" -- --alpha 1e39)
gpurelay_case(bad_alpha_float32_tiny 2 --expect-exit 2 --expect-message "outside float32's range" -- --alpha 1e-50)
gpurelay_case(alpha_large_float64 2 -- --device cpu --elements 1000 --steps 3 --warmup 1 --dtype float64 --alpha 1e39 --write all)

# Output paths: only a regular file or nothing is replaced; symlinks are resolved at start.
gpurelay_case(bad_output_dangling_symlink 2 --make "dangling.h5=symlink:/nonexistent/target.h5"
  --expect-exit 2 --expect-message "does not exist" -- --output @TMP@/dangling.h5)
gpurelay_case(bad_output_fifo 2 --make "fifo.h5=fifo" --expect-exit 2 --expect-message "is a FIFO"
  -- --output @TMP@/fifo.h5 --overwrite)
gpurelay_case(bad_output_device 2 --make "null.h5=chardev" --expect-exit 2 --expect-message "is a character device"
  -- --output @TMP@/null.h5 --overwrite)
set_tests_properties(bad_output_device PROPERTIES SKIP_RETURN_CODE 77)
gpurelay_case(bad_output_directory 2 --make "folder.h5=dir" --expect-exit 2 --expect-message "is a directory"
  -- --output @TMP@/folder.h5)
string(REPEAT "n" 250 GPURELAY_LONG_NAME)
gpurelay_case(bad_output_name_too_long 2 --expect-exit 2 --expect-message "File name too long"
  -- --output @TMP@/${GPURELAY_LONG_NAME}.h5)
gpurelay_case(output_through_symlink 2 --make "real=dir" --make "link=symlink:@TMP@/real"
  -- --device cpu --elements 1000 --steps 3 --warmup 1 --write all --output @TMP@/link/out.h5)

# Side outputs: checked at start, against the output and each other.
gpurelay_case(bad_summary_is_output 2 --expect-exit 2 --expect-message "the same file"
  -- --summary-json @TMP@/out.h5)
gpurelay_case(bad_csv_is_summary 2 --expect-exit 2 --expect-message "the same file"
  -- --summary-json @TMP@/s.json --results-csv @TMP@/s.json)
# A folder whose rights let root in but whose file system makes no files (/proc): refused at
# start, before any file is made, not after the run.
gpurelay_case(bad_summary_unwritable_folder 2 --expect-exit 2 --expect-message
  "summary_json: folder '/proc' does not take new files" -- --summary-json /proc/x.json)
gpurelay_case(bad_csv_unwritable_folder 2 --expect-exit 2 --expect-message
  "results_csv: folder '/proc' does not take new files" -- --results-csv /proc/x.csv)
gpurelay_case(bad_summary_directory 2 --make "s.json=dir" --expect-exit 2 --expect-message "is a directory"
  -- --summary-json @TMP@/s.json)

# Runs with several processes, mounts and signals (tests/integration/fault_case.py).
function(gpurelay_fault name)
  add_test(NAME fault_${name} COMMAND ${GPURELAY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/fault_case.py
    --binary $<TARGET_FILE:gpurelay> --mpirun "${GPURELAY_MPIRUN_STRING}" --case ${name})
  # Not RUN_SERIAL: each case waits for events (a .partial's first rows, the ranks' exit), not
  # for time, and works in a folder of its own, so a loaded machine only makes it longer.
  set_tests_properties(fault_${name} PROPERTIES TIMEOUT 300 LABELS integration PROCESSORS 2
    SKIP_RETURN_CODE 77)
endfunction()
gpurelay_fault(bad_text)
foreach(fault full_disk side_outputs_full read_only quota two_jobs resumable_kept complete_partial
        damaged_partial)
  gpurelay_fault(${fault})
endforeach()
# Signals sent to mpirun, not to the ranks: how Open MPI forwards them (SIGINT as SIGTERM, then
# SIGKILL; SIGUSR1 as it is) and the windows that leaves. The ranks run the stop path that the
# interruption tests (sigterm_compare_then_resume, ...) already run, so OFF (the debug preset) leaves
# these out, as it does the Slurm group: the launcher again, not more of gpurelay's code.
option(GPURELAY_LAUNCHER_SIGNAL_TESTS "the fault tests that signal mpirun itself" ON)
if(GPURELAY_LAUNCHER_SIGNAL_TESTS)
  foreach(fault mpirun_sigterm mpirun_sigint mpirun_kill_window mpirun_double_sigint mpirun_sigusr1)
    gpurelay_fault(${fault})
  endforeach()
endif()
