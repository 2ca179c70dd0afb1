// tap's coverage map: every test file reports coverage of src/ alone (the compiled tests and their
// helpers are not measured); compiled files count through their source maps.
export default () => ['src/**/*.ts'];
