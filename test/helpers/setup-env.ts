// Environment every test starts from; a test that needs something else passes overrides.
process.env.APP_ENV = 'development';
process.env.LOG_LEVEL ??= 'silent';
delete process.env.DATABASE_URL;
