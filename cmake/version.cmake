# Run at build time (cmake -P): writes OUT from IN with CAIRN_VERSION and the git revision of
# SRC (`git describe --always --dirty`, or "unknown" outside a checkout). configure_file leaves
# OUT untouched when nothing changed, so only what includes it is rebuilt after a commit.
execute_process(
  COMMAND git -C "${SRC}" describe --always --dirty --abbrev=12
  OUTPUT_VARIABLE CAIRN_REVISION
  OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET
  RESULT_VARIABLE failed)
if(failed OR CAIRN_REVISION STREQUAL "")
  set(CAIRN_REVISION "unknown")
endif()
configure_file("${IN}" "${OUT}" @ONLY)
