#!/usr/bin/env node
const { greet } = require("..");
console.log(greet(process.argv[2] || "you"));
