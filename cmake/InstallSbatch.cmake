# Installs slurm/dlio.sbatch with the install prefix's bin folder as its default DLIO_BIN_DIR. Slurm runs a copy of a
# batch script from its spool folder, so the script cannot find the binaries relative to itself; it is told at
# install time instead. Runs at install time (install(SCRIPT)); DLIO_SBATCH_SOURCE and DLIO_INSTALL_BINDIR are set
# by install(CODE) in the top-level CMakeLists.txt, CMAKE_INSTALL_PREFIX is the prefix being installed to
# (`cmake --install BUILD --prefix PATH` included).
set(_dest "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/share/dlio/slurm")
file(READ "${DLIO_SBATCH_SOURCE}" _script)
set(_marker "installed_bin_dir=\"\"")
string(FIND "${_script}" "${_marker}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "${DLIO_SBATCH_SOURCE}: no line ${_marker} to set the installed bin folder in")
endif()
string(REPLACE "${_marker}" "installed_bin_dir=\"${CMAKE_INSTALL_PREFIX}/${DLIO_INSTALL_BINDIR}\"" _script "${_script}")
message(STATUS "Installing: ${_dest}/dlio.sbatch")
file(MAKE_DIRECTORY "${_dest}")
file(WRITE "${_dest}/dlio.sbatch" "${_script}")
file(CHMOD "${_dest}/dlio.sbatch" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
     WORLD_READ WORLD_EXECUTE)
