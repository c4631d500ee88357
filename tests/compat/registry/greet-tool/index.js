exports.greet = (name) => `Hello, ${name}!`;
