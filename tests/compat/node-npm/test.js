// The tool from node_modules/.bin wrote greeting.txt; the library of the same package agrees.
const assert = require("assert");
const fs = require("fs");
const { greet } = require("greet-tool");
assert.strictEqual(fs.readFileSync("greeting.txt", "utf8"), "Hello, npm!\n");
assert.strictEqual(greet("node"), "Hello, node!");
console.log("node-npm tests passed");
