# `cmake --install BUILD --prefix PREFIX` (or `make install PREFIX=...`): the two programs in bin/,
# the sbatch templates in share/kiln/jobs/ (an installed kiln finds them from its own path), the
# shipped spec profiles in share/kiln/profiles/ (also embedded in kiln; here to read and copy), the
# JSON Schemas of report.json and results.jsonl in share/kiln/schemas/, and the docs in share/doc/kiln/.
include(GNUInstallDirs)
install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET kiln-worker)
  install(TARGETS kiln-worker RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/jobs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/jobs
        FILES_MATCHING PATTERN "*.in")
# A user's own job (docs/user-job.md): the srun wrapper and an FSDP example that follows its contract.
install(PROGRAMS ${CMAKE_SOURCE_DIR}/jobs/kiln-user-job.sh DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/jobs)
install(FILES ${CMAKE_SOURCE_DIR}/jobs/fsdp_example.py DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/jobs)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/profiles/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/profiles
        FILES_MATCHING PATTERN "*.toml")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/schemas/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/schemas
        FILES_MATCHING PATTERN "*.schema.json")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
