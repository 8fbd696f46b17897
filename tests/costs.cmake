# Read by CTest after the discovered tests are added (tests/CMakeLists.txt and
# tests/postgres/CMakeLists.txt, each for its own tests): the longest
# tests start first, so `ctest -j2` packs the others beside them even in a fresh build
# folder, where CTest has no timings of earlier runs (Testing/Temporary/CTestCostData.txt)
# to order them by. COST is the test's rough length in seconds on an idle 2-core machine; it
# changes only the order. A renamed test just loses its place (no error).
set_tests_properties(
  "fuzz: mutated consumer and scenario files never crash, hang or escape their folder"
  PROPERTIES COST 10)
set_tests_properties(
  "the scenario pages show what the program prints now"
  PROPERTIES COST 8)
set_tests_properties(
  "a crash beside a concurrent copy: reduced and brute force reach the same final states"
  "the matrix's verdicts and shortest counterexamples do not change with the reduction"
  PROPERTIES COST 4)
set_tests_properties(
  "run everything runs every scenario, and every check holds"
  "a blocked copy retries only after a step released the lock it waits for"
  "concurrent gives the post's line 50 times in each instance and journal mode"
  PROPERTIES COST 3)
set_tests_properties(
  "reduced and brute force reach the same final states, one schedule per class"
  "a second copy started after the first committed never waited for it"
  "db option on anything that is not a dedupsim database exits 3 and loses nothing"
  PROPERTIES COST 2)
set_tests_properties(
  "postgres:a throwaway cluster is a copy of the cached template, and a stale, foreign or damaged template is made again by initdb"
  PROPERTIES COST 6)
set_tests_properties(
  "postgres:docs/explore.md shows the PostgreSQL matrix exactly as explore prints it"
  PROPERTIES COST 4)
set_tests_properties(
  "postgres:the effects, broker and store lessons run on PostgreSQL with the figures SQLite has"
  "postgres:claim-last on PostgreSQL: B's stock UPDATE waits on Dune's row, then its claim fails"
  PROPERTIES COST 2)
