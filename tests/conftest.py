"""Root of the test suite. Fixtures live next to the tests that use them (and in
``tests/support`` when shared); nothing here, so unit tests stay free of I/O set-up."""
